// Renders the embedded store with the parts in browse_parts.js. Store text only ever reaches
// the page through textContent, and every lookup keyed by store text is a Map, so ids such as
// "constructor" are ordinary keys. Lists render a page at a time and filtering runs in short
// slices, so 100,000 observations never hold the page still.
(function () {
  var PAGE = 50;             // cards added to a list at a time
  var SMALL_PAGE = 20;       // the same for pins, capsules and summaries
  var DEBOUNCE_MS = 150;     // typing pause before a filter runs
  var P = kindlingParts;
  var el = P.el, button = P.button, num = P.num, when = P.when, scopeText = P.scopeText;
  var isDiff = P.isDiff, textBlock = P.textBlock, lineCount = P.lineCount;
  var contentView = P.contentView, fields = P.fields;
  var started = performance.now();

  var data = JSON.parse(document.getElementById("kindling-data").textContent);
  var O = data.observations, C = O.columns, N = C.id.length;
  var rowOf = new Map();     // observation id -> row
  var byId = new Map();      // capsule, summary and pin id -> entity
  var capsulesOf = new Map();  // observation row -> capsules holding it
  var hay = new Array(N);    // lowercased search text per row, built on first need
  var i;
  for (i = 0; i < N; i++) rowOf.set(C.id[i], i);
  ["capsules", "summaries", "pins"].forEach(function (type) {
    data[type].forEach(function (e) { byId.set(e.id, e); });
  });

  // Sessions, one index each; a scope row or entity refers to its session by that index.
  var sessions = [], sessionIndex = new Map();
  function sessionOf(scope) {
    var s = scope && Object.prototype.hasOwnProperty.call(scope, "sessionId") ? scope.sessionId : null;
    if (typeof s !== "string") return -1;
    if (!sessionIndex.has(s)) { sessionIndex.set(s, sessions.length); sessions.push(s); }
    return sessionIndex.get(s);
  }
  var scopeSession = O.scopes.map(sessionOf);

  function $(id) { return document.getElementById(id); }
  function setText(id, value) { $(id).textContent = String(value); }
  function observation(row) {
    return { id: C.id[row], kind: O.kinds[C.kind[row]], content: C.content[row],
             provenance: C.prov[row] || {}, ts: C.ts[row], scopeIds: O.scopes[C.scope[row]],
             redacted: C.redacted[row] === 1 };
  }
  function filesOf(row) { return C.files[row].map(function (f) { return O.files[f]; }); }
  function haystack(row) {
    var h = hay[row];
    if (h === undefined) {
      h = hay[row] = [C.id[row], O.kinds[C.kind[row]], C.tool[row] >= 0 ? O.tools[C.tool[row]] : "",
        filesOf(row).join(" "), scopeText(O.scopes[C.scope[row]]), C.content[row],
        C.prov[row] ? JSON.stringify(C.prov[row]) : ""].join("\n").toLowerCase();
    }
    return h;
  }

  // ---------------------------------------------------------------- cards

  var selected = null;
  function clickable(node, show) {
    node.tabIndex = 0;
    node.addEventListener("click", function () { select(node, show); });
    node.addEventListener("keydown", function (ev) {
      if (ev.target === node && (ev.key === "Enter" || ev.key === " ")) {
        ev.preventDefault();
        select(node, show);
      }
    });
  }
  function select(node, show) {
    if (selected) selected.classList.remove("selected");
    selected = node;
    if (node) node.classList.add("selected");
    show();
  }

  function head(badges) {
    var h = el("div", "head");
    badges.forEach(function (b) { if (b) h.appendChild(el("span", b[0], b[1])); });
    return h;
  }

  function obsCard(row, inDetail) {
    var red = C.redacted[row] === 1, kind = O.kinds[C.kind[row]];
    var li = el("li", "entity observation" + (red ? " redacted" : ""));
    li.dataset.id = C.id[row];
    var files = filesOf(row);
    li.appendChild(head([
      ["badge kind", kind],
      C.tool[row] >= 0 ? ["badge tool", O.tools[C.tool[row]]] : null,
      red ? ["badge redacted", "redacted"] : null,
      ["time", when(C.ts[row])],
      files.length ? ["file", files[0] + (files.length > 1 ? " +" + (files.length - 1) : "")] : null,
      ["scope", scopeText(O.scopes[C.scope[row]])],
      ["id", C.id[row]],
    ]));
    li.appendChild(red ? el("div", "content", "[redacted]")
                       : contentView(C.content[row], isDiff(kind, C.content[row])));
    if (!inDetail) clickable(li, function () { showObservation(row); });
    return li;
  }

  function summaryCard(sum, inDetail) {
    var li = el("li", "entity summary");
    li.dataset.id = sum.id;
    li.appendChild(head([["badge", "summary"], ["time", when(sum.ts)],
                         ["confidence", "confidence " + sum.confidence], ["id", sum.id]]));
    li.appendChild(contentView(sum.content, false));
    if (!inDetail) clickable(li, function () { showSummary(sum); });
    return li;
  }

  function targetText(pin) {
    var row = pin.targetType === "observation" ? rowOf.get(pin.targetId) : undefined;
    if (row !== undefined) return C.redacted[row] ? "[redacted]" : C.content[row];
    var target = pin.targetType === "observation" ? undefined : byId.get(pin.targetId);
    if (target) return target.content;
    return "(target " + pin.targetId + " is not in this store)";
  }

  function pinCard(pin) {
    var li = el("li", "entity pin");
    li.dataset.id = pin.id;
    var expired = pin.expiresAt !== null && pin.expiresAt <= data.generatedAt;
    li.appendChild(head([["badge", "pin → " + pin.targetType],
                         expired ? ["badge expired", "expired"] : null,
                         ["time", when(pin.createdAt)], ["id", pin.id]]));
    var text = targetText(pin);
    if (text === "[redacted]") li.classList.add("redacted");
    li.appendChild(contentView(text, isDiff("", text)));
    if (pin.reason) li.appendChild(el("div", "note", "Note: " + pin.reason));
    clickable(li, function () { showPin(pin); });
    return li;
  }

  function capsuleCard(cap) {
    var li = el("li", "entity capsule");
    li.dataset.id = cap.id;
    li.appendChild(head([["badge", cap.type], ["badge " + cap.status, cap.status],
                         ["time", when(cap.openedAt)],
                         ["count", num(cap.observationIds.length) + " observations"],
                         ["scope", scopeText(cap.scopeIds)], ["id", cap.id]]));
    li.appendChild(el("div", "intent", cap.intent));
    var sum = cap.summaryId ? byId.get(cap.summaryId) : undefined;
    if (sum) li.appendChild(el("div", "note", "Summary: " + sum.content));
    clickable(li, function () { showCapsule(cap); });
    return li;
  }

  // ---------------------------------------------------------------- the detail pane

  function showDetail(title, nodes, raw) {
    setText("detail-title", title);
    var body = $("detail-body");
    body.textContent = "";
    nodes.forEach(function (n) { if (n) body.appendChild(n); });
    setText("detail-json", JSON.stringify(raw, null, 2));
    $("detail-raw").hidden = false;
    $("detail").scrollTop = 0;
  }

  function capsuleLinks(row) {
    var caps = capsulesOf.get(row);
    if (!caps) return null;
    var span = el("span");
    caps.forEach(function (cap) {
      span.appendChild(button("link", cap.intent + " (" + cap.id + ")", function () {
        select(null, function () { showCapsule(cap); });
      }));
    });
    return span;
  }

  function showObservation(row) {
    var obs = observation(row);
    var prov = Object.keys(obs.provenance).sort().map(function (k) {
      return ["provenance." + k, obs.provenance[k]];
    });
    var text = obs.redacted ? el("p", "empty", "[redacted]")
                            : textBlock(obs.content, isDiff(obs.kind, obs.content));
    showDetail("observation " + obs.id, [
      fields([["kind", obs.kind], ["time", when(obs.ts)], ["scope", scopeText(obs.scopeIds)],
              ["files", filesOf(row).join("\n")], ["in capsule", capsuleLinks(row)]].concat(prov)),
      el("h3", null, "Content (" + num(lineCount(obs.content)) + " lines)"), text,
    ], obs);
  }

  function showSummary(sum) {
    var cap = byId.get(sum.capsuleId);
    showDetail("summary " + sum.id, [
      fields([["confidence", String(sum.confidence)], ["time", when(sum.ts)],
              ["scope", scopeText(sum.scopeIds)], ["evidence", sum.evidenceRefs.join("\n")],
              ["capsule", cap ? button("link", cap.intent + " (" + cap.id + ")", function () {
                select(null, function () { showCapsule(cap); });
              }) : sum.capsuleId]]),
      textBlock(sum.content, false),
    ], sum);
  }

  function showPin(pin) {
    var row = pin.targetType === "observation" ? rowOf.get(pin.targetId) : undefined;
    var target = row !== undefined ? observation(row) : byId.get(pin.targetId) || null;
    var card = row !== undefined ? obsCard(row, true)
             : target ? summaryCard(target, true) : el("p", "empty", targetText(pin));
    var list = el("ol", "entities");
    list.appendChild(card);
    showDetail("pin " + pin.id, [
      fields([["note", pin.reason], ["target", pin.targetType + " " + pin.targetId],
              ["created", when(pin.createdAt)],
              ["expires", pin.expiresAt === null ? "never" : when(pin.expiresAt)],
              ["scope", scopeText(pin.scopeIds)]]),
      list,
    ], { pin: pin, target: target });
  }

  var retired = new Set(data.retired || []);
  function absentText(oid) {
    // Retired by `kindling gc`: its summary keeps it, git history holds the file.
    return retired.has(oid) ? "retired observation " + oid + " (kindling show " + oid +
      " names the commit that holds it)" : "missing observation " + oid;
  }

  function showCapsule(cap) {
    var sum = cap.summaryId ? byId.get(cap.summaryId) : undefined;
    var sumList = el("ol", "entities");
    if (sum) sumList.appendChild(summaryCard(sum, true));
    var members = el("ol", "entities members");
    var ids = cap.observationIds, shown = 0;
    var more = button("more", "", grow);
    function grow() {
      var end = Math.min(ids.length, shown + PAGE);
      var frag = document.createDocumentFragment();
      for (; shown < end; shown++) {
        var row = rowOf.get(ids[shown]);
        frag.appendChild(row === undefined ? el("li", "empty", absentText(ids[shown]))
                                           : obsCard(row, true));
      }
      members.appendChild(frag);
      more.hidden = shown >= ids.length;
      more.textContent = "Show " + num(Math.min(PAGE, ids.length - shown)) + " more of " +
        num(ids.length - shown);
    }
    grow();
    showDetail("capsule " + cap.id, [
      el("p", "intent", cap.intent),
      fields([["type", cap.type], ["status", cap.status], ["opened", when(cap.openedAt)],
              ["closed", cap.closedAt ? when(cap.closedAt) : ""], ["scope", scopeText(cap.scopeIds)]]),
      el("h3", null, sum ? "Summary" : "No summary yet"), sumList,
      el("h3", null, "Observations, in order (" + num(ids.length) + ")"), members, more,
    ], cap);
  }

  var setPins = P.pagedList("pins", SMALL_PAGE, pinCard);
  var setCapsules = P.pagedList("capsules", SMALL_PAGE, capsuleCard);
  var setSummaries = P.pagedList("summaries", SMALL_PAGE, function (s) { return summaryCard(s, false); });
  var setObservations = P.pagedList("observations", PAGE, function (r) { return obsCard(r, false); });

  // ---------------------------------------------------------------- filtering

  var newest = function (key) { return function (a, b) { return b[key] - a[key]; }; };
  var capsules = data.capsules.slice().sort(newest("openedAt"));
  var summaries = data.summaries.slice().sort(newest("ts"));
  var pins = data.pins.slice().sort(newest("createdAt"));
  capsules.forEach(function (cap) {
    cap.observationIds.forEach(function (oid) {
      var row = rowOf.get(oid);
      if (row === undefined) return;
      if (!capsulesOf.has(row)) capsulesOf.set(row, []);
      capsulesOf.get(row).push(cap);
    });
  });
  var entityHays = new Map();
  function entityHay(e) {
    var h = entityHays.get(e);
    if (h === undefined) {
      var extra = e.summaryId && byId.get(e.summaryId) ? byId.get(e.summaryId).content : "";
      if (e.targetId) extra = targetText(e);
      h = [e.id, e.type, e.status, e.intent, e.content, e.reason, extra, scopeText(e.scopeIds)]
        .join("\n").toLowerCase();
      entityHays.set(e, h);
    }
    return h;
  }

  var fileHay = O.files.map(function (f) { return f.toLowerCase(); });
  function readFilter() {
    var pick = function (id) { return $(id).value === "" ? null : Number($(id).value); };
    var file = $("f-file").value.trim().toLowerCase();
    var f = { words: $("search").value.toLowerCase().split(/\s+/).filter(Boolean),
              kind: pick("f-kind"), tool: pick("f-tool"), session: pick("f-session"), file: null };
    if (file) f.file = new Uint8Array(fileHay.map(function (h) { return h.indexOf(file) !== -1; }));
    f.obsOnly = f.kind !== null || f.tool !== null || f.file !== null;
    f.any = f.obsOnly || f.session !== null || f.words.length > 0;
    return f;
  }
  function wordsIn(text, words) {
    for (var k = 0; k < words.length; k++) if (text.indexOf(words[k]) === -1) return false;
    return true;
  }
  function obsMatches(row, f) {
    if (f.kind !== null && C.kind[row] !== f.kind) return false;
    if (f.tool !== null && C.tool[row] !== f.tool) return false;
    if (f.session !== null && scopeSession[C.scope[row]] !== f.session) return false;
    if (f.file) {
      var fs = C.files[row], hit = false;
      for (var k = 0; k < fs.length && !hit; k++) hit = f.file[fs[k]] === 1;
      if (!hit) return false;
    }
    return f.words.length === 0 || wordsIn(haystack(row), f.words);
  }
  function ownMatch(e, f) {
    return !f.obsOnly && (f.session === null || sessionOf(e.scopeIds) === f.session) &&
      wordsIn(entityHay(e), f.words);
  }

  var filterRuns = 0;
  function applyFilter() {
    var t = performance.now(), f = readFilter();
    document.body.dataset.busy = "1";
    var matched = new Uint8Array(N), rows = [];
    P.inSlices(N, function (from, to) {
      for (var r = from; r < to; r++) if (!f.any || obsMatches(r, f)) { matched[r] = 1; rows.push(r); }
    }, function (share) {
      setText("match-count", "Filtering… " + Math.floor(100 * share) + "%");
    }, function () {
      var hasMember = function (cap) {
        return cap.observationIds.some(function (oid) {
          var row = rowOf.get(oid);
          return row !== undefined && matched[row] === 1;
        });
      };
      var caps = !f.any ? capsules : capsules.filter(function (c) { return ownMatch(c, f) || hasMember(c); });
      var sums = !f.any ? summaries : summaries.filter(function (s) {
        var cap = byId.get(s.capsuleId);
        return ownMatch(s, f) || (f.obsOnly && cap !== undefined && hasMember(cap) &&
                                  wordsIn(entityHay(s), f.words));
      });
      var shownPins = !f.any ? pins : pins.filter(function (p) {
        var row = p.targetType === "observation" ? rowOf.get(p.targetId) : undefined;
        return ownMatch(p, f) || (row !== undefined && matched[row] === 1);
      });
      var none = function (what) { return f.any ? "No " + what + " match." : "No " + what + "."; };
      setObservations(rows, none("observations"));
      setCapsules(caps, none("capsules"));
      setSummaries(sums, none("summaries"));
      setPins(shownPins, none("pins"));
      var parts = [[rows.length, N, "observations"], [caps.length, capsules.length, "capsules"],
                   [sums.length, summaries.length, "summaries"], [shownPins.length, pins.length, "pins"]];
      parts.forEach(function (p) {
        setText("shown-" + p[2], f.any ? num(p[0]) + " of " + num(p[1]) : num(p[1]));
        setText("jump-" + p[2], num(p[0]));
      });
      var shown = rows.length + caps.length + sums.length + shownPins.length;
      var total = N + capsules.length + summaries.length + pins.length;
      setText("match-count", f.any ? num(shown) + " of " + num(total) + " match" : num(total) + " items");
      filterRuns += 1;
      document.body.dataset.filterMs = String(Math.round(performance.now() - t));
      document.body.dataset.filterRuns = String(filterRuns);
      document.body.dataset.busy = timer === null ? "0" : "1";
    });
  }

  // Typing waits for a pause; a choice in a list applies at once. data-busy says whether a
  // filter is still to come, so a reader (or a test) knows when the lists are final.
  var timer = null;
  function now() { clearTimeout(timer); timer = null; applyFilter(); }
  function later(delay) {
    clearTimeout(timer);
    document.body.dataset.busy = "1";
    timer = setTimeout(now, delay);
  }
  var form = $("filters");
  form.addEventListener("submit", function (ev) { ev.preventDefault(); now(); });
  form.addEventListener("reset", function () { later(0); });  // runs once the form is reset
  ["search", "f-file"].forEach(function (id) {
    $(id).addEventListener("input", function () { later(DEBOUNCE_MS); });
    $(id).addEventListener("change", function () { later(DEBOUNCE_MS); });
  });
  ["f-kind", "f-tool", "f-session"].forEach(function (id) { $(id).addEventListener("change", now); });

  // ---------------------------------------------------------------- header and first render

  function options(id, labels, counts) {
    var select = $(id);
    labels.map(function (label, k) { return [label, k, counts[k]]; })
      .filter(function (o) { return o[2] > 0; })
      .sort(function (a, b) { return b[2] - a[2] || (a[0] < b[0] ? -1 : 1); })
      .forEach(function (o) {
        var opt = el("option", null, o[0] + " (" + num(o[2]) + ")");
        opt.value = String(o[1]);
        select.appendChild(opt);
      });
  }
  function tally(column, size) {
    var counts = new Array(size).fill(0);
    for (var r = 0; r < N; r++) if (column[r] >= 0) counts[column[r]] += 1;
    return counts;
  }
  var sessionCounts = [];
  capsules.concat(summaries, pins).forEach(function (e) { sessionOf(e.scopeIds); });
  sessions.forEach(function () { sessionCounts.push(0); });
  for (i = 0; i < N; i++) if (scopeSession[C.scope[i]] >= 0) sessionCounts[scopeSession[C.scope[i]]] += 1;
  capsules.concat(summaries, pins).forEach(function (e) {
    var s = sessionOf(e.scopeIds);
    if (s >= 0) sessionCounts[s] += 1;
  });
  options("f-kind", O.kinds, tally(C.kind, O.kinds.length));
  options("f-tool", O.tools, tally(C.tool, O.tools.length));
  options("f-session", sessions, sessionCounts);
  // The file suggestions are built when first wanted: a large store names many files.
  $("f-file").addEventListener("focus", function fillFiles() {
    $("f-file").removeEventListener("focus", fillFiles);
    var list = $("file-list"), frag = document.createDocumentFragment();
    O.files.slice().sort().slice(0, 5000).forEach(function (f) {
      var opt = el("option");
      opt.value = f;
      frag.appendChild(opt);
    });
    list.appendChild(frag);
  });

  var redacted = 0;
  for (i = 0; i < N; i++) redacted += C.redacted[i];
  setText("store-path", data.store);
  setText("generated-at", "· generated " + when(data.generatedAt));
  setText("count-pins", pins.length);
  setText("count-capsules", capsules.length);
  setText("count-open", capsules.filter(function (c) { return c.status === "open"; }).length);
  setText("count-summaries", summaries.length);
  setText("count-observations", N);
  setText("count-redacted", redacted);
  if (data.problems.length) {
    var p = $("problems");
    p.textContent = data.problems.length + " file(s) could not be read: " +
      data.problems.map(function (x) { return x.path + " (" + x.reason + ")"; }).join("; ");
    p.hidden = false;
  }
  applyFilter();
  document.body.dataset.loadMs = String(Math.round(performance.now() - started));

  // Build the search text in idle moments, so the first filter finds it ready.
  if (window.requestIdleCallback) {
    var warm = 0;
    requestIdleCallback(function fill(deadline) {
      while (warm < N && deadline.timeRemaining() > 2) {
        for (var end = Math.min(N, warm + 200); warm < end; warm++) haystack(warm);
      }
      if (warm < N) requestIdleCallback(fill);
    });
  }
})();
