"""Zoom and pan for an inline SVG (the report's DAG): a toolbar, a viewport and an overview map.

:func:`zoomable` wraps an SVG string in the markup that :data:`ZOOM_JS` brings to life: the
drawing opens fitted to the width of the page (never enlarged beyond its natural size); the
buttons show the whole graph, fit the width, zoom out and in, or show it at 100 %; Ctrl + wheel
(or a trackpad pinch) zooms at the pointer, the wheel alone scrolls the drawing, dragging pans it,
a double click zooms in.  When the drawing does not fit in its box, a small copy of it in the
corner shows where the view is; click or drag in it to move there.

The script is a few dozen lines of plain JavaScript embedded once per page (no library, nothing
fetched), and it only changes the ``viewBox`` of the SVG.  Without JavaScript the SVG stays at its
natural size in a box that scrolls, as before.
"""

from __future__ import annotations

ZOOM_CSS = """
.wb-zoom { border: 1px solid #e4e7eb; border-radius: 4px; }
.wb-zoom-bar { display: flex; gap: 6px; align-items: center; flex-wrap: wrap; padding: 6px 8px;
               border-bottom: 1px solid #e4e7eb; background: #f5f7fa; font-size: 0.9em; }
.wb-zoom-bar button { font: inherit; padding: 2px 10px; border: 1px solid #c5cdd6;
                      border-radius: 3px; background: white; cursor: pointer; }
.wb-zoom-bar button:hover { background: #e8eef7; }
.wb-zoom-hint { color: #52606d; margin-left: auto; }
.wb-zoom-view { position: relative; overflow: auto; max-height: 80vh; }
.wb-zoom-view.wb-live { overflow: hidden; cursor: grab; touch-action: none; }
.wb-zoom-view.wb-live.wb-drag { cursor: grabbing; }
.wb-zoom-view.wb-live > svg { display: block; width: 100%; height: 100%; }
.wb-zoom-map { position: absolute; top: 8px; right: 8px; width: 150px; background: white;
               border: 1px solid #9aa5b1; box-shadow: 0 1px 4px rgba(0,0,0,.2); cursor: pointer;
               opacity: .92; }
.wb-zoom-map svg { display: block; width: 100%; height: auto; pointer-events: none; }
.wb-zoom-map .wb-zoom-frame { position: absolute; border: 2px solid #e15759;
                              background: rgba(225,87,89,.08); pointer-events: none; }
"""

ZOOM_JS = r"""
(function () {
  "use strict";
  function size(attr) {  // "1234pt" -> px
    var v = parseFloat(attr);
    if (!(v > 0)) return null;
    return /pt$/.test(attr) ? v * 4 / 3 : (/in$/.test(attr) ? v * 96 : v);
  }
  function init(root) {
    var view = root.querySelector(".wb-zoom-view"), svg = view && view.querySelector("svg");
    if (!svg || root.wbZoom) return;
    var vb = (svg.getAttribute("viewBox") || "").trim().split(/[\s,]+/).map(Number);
    if (vb.length !== 4 || !(vb[2] > 0 && vb[3] > 0)) {
      var b = svg.getBBox(); vb = [b.x, b.y, b.width, b.height];
    }
    var natW = size(svg.getAttribute("width") || "") || vb[2];
    var unit = natW / vb[2];                      // px per viewBox unit at 100 %
    var natH = vb[3] * unit, st = {x: vb[0], y: vb[1], s: 1};
    var map = null, frame = null;
    svg.removeAttribute("width"); svg.removeAttribute("height");
    svg.setAttribute("preserveAspectRatio", "xMinYMin meet");
    view.classList.add("wb-live");
    var shown = natH * Math.min(1, (view.clientWidth || natW) / natW);  // at "fit width"
    view.style.height = Math.max(160, Math.min(shown + 4, 0.8 * window.innerHeight)) + "px";
    function box() { return {w: view.clientWidth || 1, h: view.clientHeight || 1}; }
    function limits() {
      var b = box(), fit = Math.min(b.w / vb[2], b.h / vb[3]);
      return {lo: Math.min(fit, unit) * 0.5, hi: unit * 8};
    }
    function apply() {
      var b = box(), w = b.w / st.s, h = b.h / st.s;
      // keep some of the drawing in view
      st.x = Math.min(Math.max(st.x, vb[0] - w * 0.9), vb[0] + vb[2] - w * 0.1);
      st.y = Math.min(Math.max(st.y, vb[1] - h * 0.9), vb[1] + vb[3] - h * 0.1);
      svg.setAttribute("viewBox", [st.x, st.y, w, h].map(function (v) {
        return v.toFixed(2); }).join(" "));
      root.setAttribute("data-scale", (st.s / unit).toFixed(3));
      var whole = w >= vb[2] - 1e-6 && h >= vb[3] - 1e-6;
      if (map) {
        map.style.display = whole ? "none" : "block";
        var k = map.clientWidth / vb[2], mw = map.clientWidth, mh = map.clientHeight;
        var x0 = Math.max(0, (st.x - vb[0]) * k), y0 = Math.max(0, (st.y - vb[1]) * k);
        var x1 = Math.min(mw, (st.x + w - vb[0]) * k), y1 = Math.min(mh, (st.y + h - vb[1]) * k);
        frame.style.left = x0 + "px"; frame.style.top = y0 + "px";
        frame.style.width = Math.max(2, x1 - x0) + "px";
        frame.style.height = Math.max(2, y1 - y0) + "px";
      }
    }
    function zoomTo(s, px, py) {  // new scale, keeping the point under (px, py) in place
      var l = limits(), b = box();
      s = Math.min(Math.max(s, l.lo), l.hi);
      if (px === undefined) { px = b.w / 2; py = b.h / 2; }
      st.x += px / st.s - px / s; st.y += py / st.s - py / s; st.s = s; apply();
    }
    function fit(whole) {
      var b = box();
      st.s = Math.min(unit, b.w / vb[2], whole ? b.h / vb[3] : Infinity);
      st.x = vb[0] - Math.max(0, b.w / st.s - vb[2]) / 2;
      st.y = vb[1] - (whole ? Math.max(0, b.h / st.s - vb[3]) / 2 : 0);
      apply();
    }
    var actions = {
      whole: function () { fit(true); }, width: function () { fit(false); },
      "in": function () { zoomTo(st.s * 1.4); }, out: function () { zoomTo(st.s / 1.4); },
      one: function () { zoomTo(unit); }
    };
    root.querySelectorAll("[data-wb-zoom]").forEach(function (btn) {
      btn.addEventListener("click", function () { actions[btn.getAttribute("data-wb-zoom")](); });
    });
    view.addEventListener("wheel", function (e) {
      var r = view.getBoundingClientRect(), b = box();
      if (e.ctrlKey || e.metaKey) {
        e.preventDefault();
        zoomTo(st.s * Math.exp(-e.deltaY * (e.deltaMode ? 0.05 : 0.002)),
               e.clientX - r.left, e.clientY - r.top);
        return;
      }
      var dx = e.shiftKey ? e.deltaY : e.deltaX, dy = e.shiftKey ? 0 : e.deltaY;
      var k = e.deltaMode ? 16 : 1, h = b.h / st.s;
      var atEnd = (dy > 0 && st.y + h >= vb[1] + vb[3] - 1) || (dy < 0 && st.y <= vb[1] + 1);
      if (!dx && atEnd) return;                  // let the page scroll on
      e.preventDefault();
      st.x += dx * k / st.s; st.y += dy * k / st.s; apply();
    }, {passive: false});
    var drag = null;
    view.addEventListener("pointerdown", function (e) {
      if (e.button !== 0 || (map && map.contains(e.target))) return;
      drag = {x: e.clientX, y: e.clientY}; view.setPointerCapture(e.pointerId);
      view.classList.add("wb-drag");
    });
    view.addEventListener("pointermove", function (e) {
      if (!drag) return;
      st.x -= (e.clientX - drag.x) / st.s; st.y -= (e.clientY - drag.y) / st.s;
      drag = {x: e.clientX, y: e.clientY}; apply();
    });
    function stop() { drag = null; view.classList.remove("wb-drag"); }
    view.addEventListener("pointerup", stop); view.addEventListener("pointercancel", stop);
    view.addEventListener("dblclick", function (e) {
      var r = view.getBoundingClientRect();
      zoomTo(st.s * 2, e.clientX - r.left, e.clientY - r.top);
    });
    if (vb[2] > 0 && vb[3] > 0) {
      map = document.createElement("div"); map.className = "wb-zoom-map";
      var mapH = Math.min(220, 0.6 * view.clientHeight);      // at most 160 x 220 px
      map.style.width = Math.max(12, Math.min(160, mapH * vb[2] / vb[3])) + "px";
      var copy = svg.cloneNode(true); copy.removeAttribute("id");
      copy.setAttribute("viewBox", vb.join(" "));
      map.appendChild(copy);
      frame = document.createElement("div"); frame.className = "wb-zoom-frame";
      map.appendChild(frame); view.appendChild(map);
      var moving = false;
      function go(e) {
        var r = map.getBoundingClientRect(), k = map.clientWidth / vb[2], b = box();
        st.x = vb[0] + (e.clientX - r.left) / k - b.w / st.s / 2;
        st.y = vb[1] + (e.clientY - r.top) / k - b.h / st.s / 2; apply();
      }
      map.addEventListener("pointerdown", function (e) {
        moving = true; map.setPointerCapture(e.pointerId); go(e); e.stopPropagation();
      });
      map.addEventListener("pointermove", function (e) { if (moving) go(e); });
      map.addEventListener("pointerup", function () { moving = false; });
    }
    window.addEventListener("resize", apply);
    root.wbZoom = {actions: actions, state: st, unit: unit};
    fit(false);
  }
  function all() { document.querySelectorAll(".wb-zoom").forEach(init); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", all);
  else all();
})();
"""

_BUTTONS = (("whole", "whole graph"), ("width", "fit width"), ("out", "−"), ("in", "+"),
            ("one", "100 %"))
HINT = "Ctrl + wheel: zoom · wheel: scroll · drag: pan · double click: zoom in"


def zoomable(svg: str, *, label: str = "") -> str:
    """``svg`` (an inline ``<svg>`` element) in the zoom/pan markup of :data:`ZOOM_JS`.

    ``label`` is HTML shown at the start of the toolbar (escape names yourself).  The page needs
    :data:`ZOOM_CSS` and :data:`ZOOM_JS` once (see :func:`workbench.orchestration.report.render`).

    >>> html = zoomable('<svg viewBox="0 0 10 10"></svg>')
    >>> html.count('data-wb-zoom="'), '<svg viewBox="0 0 10 10"></svg>' in html
    (5, True)
    """
    buttons = "".join(f'<button type="button" data-wb-zoom="{act}">{text}</button>'
                      for act, text in _BUTTONS)
    lead = f"<span>{label}</span>" if label else ""
    return (f'<div class="wb-zoom"><div class="wb-zoom-bar">{lead}{buttons}'
            f'<span class="wb-zoom-hint">{HINT}</span></div>'
            f'<div class="wb-zoom-view">{svg}</div></div>')
