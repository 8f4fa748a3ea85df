"use strict";
// Renders the embedded store. Store text only ever reaches the page through textContent.
(function () {
  var data = JSON.parse(document.getElementById("kindling-data").textContent);
  var byId = {};
  var searchable = [];  // [element, lowercased text]

  ["observations", "capsules", "summaries", "pins"].forEach(function (type) {
    data[type].forEach(function (e) { byId[e.id] = { type: type, entity: e }; });
  });

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function when(ms) {
    if (typeof ms !== "number") return "";
    return new Date(ms).toISOString().replace("T", " ").slice(0, 19) + " UTC";
  }

  function scopeText(scope) {
    return Object.keys(scope || {}).sort().map(function (k) { return k + "=" + scope[k]; }).join(" ");
  }

  function setText(id, value) { document.getElementById(id).textContent = String(value); }

  function select(node, title, entity) {
    var old = document.querySelector(".entity.selected");
    if (old) old.classList.remove("selected");
    node.classList.add("selected");
    setText("detail-title", title);
    setText("detail-json", JSON.stringify(entity, null, 2));
  }

  function clickable(node, title, entity) {
    node.tabIndex = 0;
    node.addEventListener("click", function (ev) { ev.stopPropagation(); select(node, title, entity); });
    node.addEventListener("keydown", function (ev) {
      if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); select(node, title, entity); }
    });
  }

  function entityText(ref) {
    if (!ref) return "";
    var e = ref.entity;
    return [e.id, e.kind, e.content, e.intent, e.reason, scopeText(e.scopeIds)].join(" ");
  }

  function observationItem(obs) {
    var li = el("li", "entity observation" + (obs.redacted ? " redacted" : ""));
    li.dataset.type = "observation";
    var head = el("div", "head");
    head.appendChild(el("span", "badge", obs.kind));
    if (obs.redacted) head.appendChild(el("span", "badge redacted", "redacted"));
    head.appendChild(el("span", "time", when(obs.ts)));
    head.appendChild(el("span", "scope", scopeText(obs.scopeIds)));
    head.appendChild(el("span", "id", obs.id));
    li.appendChild(head);
    li.appendChild(el("div", "content", obs.redacted ? "[redacted]" : obs.content));
    clickable(li, "observation " + obs.id, obs);
    return li;
  }

  function summaryItem(sum) {
    var li = el("li", "entity summary");
    li.dataset.type = "summary";
    var head = el("div", "head");
    head.appendChild(el("span", "badge", "summary"));
    head.appendChild(el("span", "time", when(sum.ts)));
    head.appendChild(el("span", "confidence", "confidence " + sum.confidence));
    head.appendChild(el("span", "id", sum.id));
    li.appendChild(head);
    li.appendChild(el("div", "content", sum.content));
    clickable(li, "summary " + sum.id, sum);
    return li;
  }

  function pinItem(pin) {
    var target = byId[pin.targetId];
    var li = el("li", "entity pin");
    li.dataset.type = "pin";
    var head = el("div", "head");
    head.appendChild(el("span", "badge", "pin → " + pin.targetType));
    if (pin.expiresAt !== null && pin.expiresAt <= data.generatedAt) {
      head.appendChild(el("span", "badge expired", "expired"));
    }
    head.appendChild(el("span", "time", when(pin.createdAt)));
    head.appendChild(el("span", "id", pin.id));
    li.appendChild(head);
    var text;
    if (!target) text = "(target " + pin.targetId + " is not in this store)";
    else if (target.entity.redacted) text = "[redacted]";
    else text = target.entity.content;
    li.appendChild(el("div", "content", text));
    if (target && target.entity.redacted) li.classList.add("redacted");
    if (pin.reason) li.appendChild(el("div", "note", "Note: " + pin.reason));
    clickable(li, "pin " + pin.id, { pin: pin, target: target ? target.entity : null });
    return li;
  }

  function capsuleBlock(cap) {
    var box = el("details", "capsule");
    box.dataset.type = "capsule";
    var head = el("summary");
    var line = el("span", "entity-line");
    line.appendChild(el("span", "badge", cap.type));
    line.appendChild(document.createTextNode(" "));
    line.appendChild(el("span", "badge" + (cap.status === "open" ? " open" : ""), cap.status));
    line.appendChild(document.createTextNode(" "));
    line.appendChild(el("strong", "intent", cap.intent));
    line.appendChild(el("span", "meta",
      "  " + when(cap.openedAt) + " · " + cap.observationIds.length + " observations · " + cap.id));
    head.appendChild(line);
    box.appendChild(head);

    var info = el("div", "entity capsule-json", "Capsule JSON");
    clickable(info, "capsule " + cap.id, cap);
    box.appendChild(info);
    var text = entityText({ entity: cap });
    var summary = cap.summaryId ? byId[cap.summaryId] : null;
    if (summary) {
      var sl = el("ol", "entities");
      sl.appendChild(summaryItem(summary.entity));
      box.appendChild(sl);
      text += " " + entityText(summary);
    }
    var members = el("ol", "entities");
    cap.observationIds.forEach(function (oid) {
      var ref = byId[oid];
      if (ref) {
        members.appendChild(observationItem(ref.entity));
        text += " " + entityText(ref);
      } else {
        members.appendChild(el("li", "empty", "missing observation " + oid));
      }
    });
    box.appendChild(members);
    searchable.push([box, text.toLowerCase()]);
    return box;
  }

  function fill(listId, items, make, emptyText) {
    var list = document.getElementById(listId);
    if (!items.length) { list.appendChild(el("li", "empty", emptyText)); return; }
    items.forEach(function (item) {
      var node = make(item);
      list.appendChild(node);
      var text = entityText({ entity: item });
      if (item.targetId) text += " " + entityText(byId[item.targetId]);
      searchable.push([node, text.toLowerCase()]);
    });
  }

  var newest = function (key) { return function (a, b) { return b[key] - a[key]; }; };
  var observations = data.observations.slice().sort(newest("ts"));
  var summaries = data.summaries.slice().sort(newest("ts"));
  var capsules = data.capsules.slice().sort(newest("openedAt"));
  var pins = data.pins.slice().sort(newest("createdAt"));

  setText("store-path", data.store);
  setText("generated-at", "· generated " + when(data.generatedAt));
  setText("count-pins", pins.length);
  setText("count-capsules", capsules.length);
  setText("count-open", capsules.filter(function (c) { return c.status === "open"; }).length);
  setText("count-summaries", summaries.length);
  setText("count-observations", observations.length);
  setText("count-redacted", observations.filter(function (o) { return o.redacted; }).length);
  if (data.problems.length) {
    var p = document.getElementById("problems");
    p.textContent = data.problems.length + " file(s) could not be read: " +
      data.problems.map(function (x) { return x.path + " (" + x.reason + ")"; }).join("; ");
    p.hidden = false;
  }

  fill("pins", pins, pinItem, "No pins.");
  var capsuleBox = document.getElementById("capsules");
  if (!capsules.length) capsuleBox.appendChild(el("p", "empty", "No capsules."));
  capsules.forEach(function (cap) { capsuleBox.appendChild(capsuleBlock(cap)); });
  fill("summaries", summaries, summaryItem, "No summaries.");
  fill("observations", observations, observationItem, "No observations.");

  var total = searchable.length;
  var box = document.getElementById("search");
  function applyFilter() {
    var words = box.value.toLowerCase().split(/\s+/).filter(Boolean);
    var shown = 0;
    searchable.forEach(function (pair) {
      var match = words.every(function (w) { return pair[1].indexOf(w) !== -1; });
      pair[0].hidden = !match;
      if (match) shown += 1;
      if (match && words.length && pair[0].tagName === "DETAILS") pair[0].open = true;
    });
    setText("match-count", words.length ? shown + " of " + total + " match" : total + " items");
  }
  box.addEventListener("input", applyFilter);
  applyFilter();
})();
