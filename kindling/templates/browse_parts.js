"use strict";
// Building blocks of the browse page that know nothing of the store: elements filled only
// through textContent, times, diffs coloured by line, collapsed previews with an expand
// control, lists drawn a page at a time, and work done in slices that let the page breathe.
var kindlingParts = (function () {
  var PREVIEW_LINES = 8;     // a card shows this much before its expand control
  var PREVIEW_CHARS = 1200;
  var SLICE_MS = 12;         // longest a slice of work runs before the page gets a turn

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function button(cls, text, onClick) {
    var b = el("button", cls, text);
    b.type = "button";
    b.addEventListener("click", function (ev) { ev.stopPropagation(); onClick(ev); });
    return b;
  }
  function num(n) { return n.toLocaleString("en-US"); }
  function when(ms) {
    if (ms === null || ms === undefined) return "";
    var d = new Date(ms);
    if (typeof ms !== "number" || isNaN(d.getTime())) return String(ms);
    return d.toISOString().replace("T", " ").slice(0, 19) + " UTC";
  }
  function scopeText(scope) {
    return Object.keys(scope || {}).sort().map(function (k) { return k + "=" + scope[k]; }).join(" ");
  }

  function isDiff(kind, text) { return kind === "file_diff" || /^--- .*\n\+\+\+ /m.test(text); }

  function textBlock(text, diff) {
    var pre = el("pre", diff ? "text diff" : "text");
    if (!diff) { pre.textContent = text; return pre; }
    var lines = text.split("\n");
    if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop();
    var header = false;
    lines.forEach(function (line, k) {
      var cls = "";
      if (line.slice(0, 4) === "--- " && (lines[k + 1] || "").slice(0, 4) === "+++ ") header = true;
      if (header || line.slice(0, 5) === "diff ") cls = "meta";
      else if (line.slice(0, 2) === "@@") cls = "hunk";
      else if (line[0] === "+") cls = "add";
      else if (line[0] === "-") cls = "del";
      if (line.slice(0, 4) === "+++ ") header = false;
      pre.appendChild(el("span", "line " + cls, line));
    });
    return pre;
  }

  function lineCount(text) {
    var n = 1, at = -1;
    while ((at = text.indexOf("\n", at + 1)) !== -1) n++;
    return text[text.length - 1] === "\n" ? n - 1 : n;
  }

  // Where a preview of `text` ends, or -1 when the whole text is short enough to show.
  function previewEnd(text) {
    if (text.length <= PREVIEW_CHARS && lineCount(text) <= PREVIEW_LINES) return -1;
    var end = -1;
    for (var k = 0; k < PREVIEW_LINES; k++) {
      var next = text.indexOf("\n", end + 1);
      if (next === -1) { end = text.length; break; }
      end = next;
    }
    return Math.min(end, PREVIEW_CHARS);
  }

  function contentView(text, diff) {
    var box = el("div", "content");
    var end = previewEnd(text);
    if (end === -1) { box.appendChild(textBlock(text, diff)); return box; }
    var shown = textBlock(text.slice(0, end), diff);
    var label = "Show all " + num(lineCount(text)) + " lines (" + num(text.length) + " characters)";
    box.appendChild(shown);
    box.classList.add("collapsed");
    var toggle = button("expand", label, function () {
      var open = toggle.getAttribute("aria-expanded") !== "true";
      var next = textBlock(open ? text : text.slice(0, end), diff);
      box.replaceChild(next, shown);
      shown = next;
      box.classList.toggle("collapsed", !open);
      toggle.setAttribute("aria-expanded", String(open));
      toggle.textContent = open ? "Collapse" : label;
    });
    toggle.setAttribute("aria-expanded", "false");
    box.appendChild(toggle);
    return box;
  }

  function fields(pairs) {
    var dl = el("dl", "fields");
    pairs.forEach(function (p) {
      if (!p || p[1] === undefined || p[1] === null || p[1] === "") return;
      dl.appendChild(el("dt", null, p[0]));
      var dd = el("dd");
      if (p[1] instanceof Node) dd.appendChild(p[1]);
      else dd.appendChild(el("pre", "text", typeof p[1] === "string" ? p[1] : JSON.stringify(p[1])));
      dl.appendChild(dd);
    });
    return dl;
  }

  // A list shown `size` items at a time: a button (and scrolling it into view) adds the next
  // page. Returns a function that replaces the items, with the text to show when there are none.
  function pagedList(id, size, make) {
    var list = document.getElementById(id);
    var more = button("more", "", grow);
    list.parentNode.appendChild(more);
    var rows = [], shown = 0;
    function grow() {
      var end = Math.min(rows.length, shown + size);
      var frag = document.createDocumentFragment();
      for (; shown < end; shown++) frag.appendChild(make(rows[shown]));
      list.appendChild(frag);
      var left = rows.length - shown;
      more.hidden = left <= 0;
      more.textContent = "Show " + num(Math.min(size, left)) + " more (" + num(left) + " not shown)";
    }
    if (window.IntersectionObserver) {
      new IntersectionObserver(function (entries) {
        if (entries[0].isIntersecting && !more.hidden) grow();
      }, { rootMargin: "400px" }).observe(more);
    }
    return function (next, emptyText) {
      rows = next;
      shown = 0;
      list.textContent = "";
      if (!rows.length) list.appendChild(el("li", "empty", emptyText));
      grow();
    };
  }

  // Runs `step(from, to)` over 0..n in slices of at most SLICE_MS, reporting the share done
  // between slices, then `done()`; a newer run cancels an older one. A MessageChannel yields
  // without the 4 ms clamp of nested timers.
  var channel = new MessageChannel(), pending = null, generation = 0;
  channel.port1.onmessage = function () { if (pending) pending(); };
  function inSlices(n, step, progress, done) {
    var gen = ++generation, at = 0;
    pending = function () {
      if (gen !== generation) return;
      var stop = performance.now() + SLICE_MS;
      while (at < n && performance.now() < stop) {
        var to = Math.min(n, at + 256);
        step(at, to);
        at = to;
      }
      if (at < n) {
        progress(at / n);
        channel.port2.postMessage(0);
      } else {
        pending = null;
        done();
      }
    };
    pending();
  }

  return { el: el, button: button, num: num, when: when, scopeText: scopeText, isDiff: isDiff,
           textBlock: textBlock, lineCount: lineCount, contentView: contentView, fields: fields,
           pagedList: pagedList, inSlices: inSlices };
})();
