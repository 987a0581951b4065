// 文中插图的交互版。构建时 @figure_data（code/figkit.py）算好数据，存成本站的 figures/<名字>.data.json，
// 图的 data-llm-data 属性写着它的地址；这里取来数据，画一个可以操作的版本，并藏起静态 SVG。
// 没有脚本、取不到数据、打印时看到的仍是静态 SVG（figures.css）。
// 两种画法：heatmap（指向、点按或用方向键选格子，旁边读出行、列和数值）与 bars（滑块加按钮，旁边列出统计量）。
// 颜色全部来自 Material 的 CSS 变量，切换浅色 / 深色时自动跟着变；不加载任何其他文件。
(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var counter = 0;

  function make(tag, attrs, parent, text, svg) {
    var node = svg ? document.createElementNS(NS, tag) : document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text !== undefined) node.textContent = text;
    if (parent) parent.appendChild(node);
    return node;
  }
  function html(tag, attrs, parent, text) { return make(tag, attrs, parent, text, false); }
  function svg(tag, attrs, parent, text) { return make(tag, attrs, parent, text, true); }

  // ------------------------------------------------------------------ 热力图
  function heatmap(data, body, id) {
    var R = data.rows.length, C = data.cols.length;
    var rowTicks = data.ticks || data.rows, colTicks = data.ticks || data.cols;
    var cell = C <= 8 ? 36 : Math.max(16, Math.floor(300 / C));
    var left = 30, top = 20, W = left + C * cell + 2, H = top + R * cell + 2;
    var span = data.vmax - data.vmin;
    var box = html("div", { "class": "llm-ix__plotbox" + (cell < 24 ? " llm-ix--dense" : "") }, body);
    html("p", { "class": "llm-ix__axes" }, box, "行：" + data.row_name + "　列：" + data.col_name);
    var plot = html("div", {
      "class": "llm-ix__plot", tabindex: "0", role: "application",
      "aria-label": data.value_name + "热力图：" + R + " 行 " + C + " 列，用方向键移动选中的格子",
      "aria-describedby": id + "-readout"
    }, box);
    var root = svg("svg", { viewBox: "0 0 " + W + " " + H, width: W, height: H, "aria-hidden": "true" }, plot);
    var colText = colTicks.map(function (t, j) {
      return svg("text", { x: left + (j + 0.5) * cell, y: top - 6, "text-anchor": "middle" }, root, t);
    });
    var rowText = rowTicks.map(function (t, i) {
      return svg("text", { x: left - 5, y: top + (i + 0.5) * cell, "text-anchor": "end", "dominant-baseline": "central" },
        root, t);
    });
    svg("rect", { "class": "llm-ix__frame", x: left, y: top, width: C * cell, height: R * cell }, root);
    var cells = [];
    for (var i = 0; i < R; i++) {
      cells.push([]);
      for (var j = 0; j < C; j++) {
        cells[i].push(svg("rect", {
          "class": "llm-ix__cell", x: left + j * cell, y: top + i * cell, width: cell, height: cell,
          "data-i": i, "data-j": j
        }, root));
      }
    }
    (data.dividers || []).forEach(function (d) {
      svg("line", { "class": "llm-ix__divider", x1: left + d * cell, x2: left + d * cell, y1: top, y2: top + R * cell }, root);
      svg("line", { "class": "llm-ix__divider", y1: top + d * cell, y2: top + d * cell, x1: left, x2: left + C * cell }, root);
    });
    var rowBand = svg("rect", { "class": "llm-ix__band", x: left, width: C * cell, height: cell }, root);
    var colBand = svg("rect", { "class": "llm-ix__band", y: top, width: cell, height: R * cell }, root);
    var cursor = svg("rect", { "class": "llm-ix__cursor", width: cell, height: cell }, root);
    var readout = html("p", { "class": "llm-ix__readout", id: id + "-readout", "aria-live": "polite" }, body,
      "指向、点按格子，或选中图后按方向键：这里显示" + data.row_name + "、" + data.col_name + "和" + data.value_name + "。");
    var legend = html("p", { "class": "llm-ix__legend", "aria-hidden": "true" }, box);
    html("span", {}, legend, String(data.vmin));
    html("span", { "class": "llm-ix__ramp" }, legend);
    html("span", {}, legend, String(data.vmax));

    var view = null, at = null;

    function masked(i, j) { return view.causal && j > i; }

    function select(i, j) {
      at = [Math.max(0, Math.min(R - 1, i)), Math.max(0, Math.min(C - 1, j))];
      i = at[0]; j = at[1];
      var v = view.values[i][j];
      readout.textContent = data.row_name + " " + data.rows[i] + " → " + data.col_name + " " + data.cols[j] + "：" +
        data.value_name + " " + v.toFixed(3) + (masked(i, j) ? "（被因果掩码屏蔽）" : "");
      rowBand.setAttribute("y", top + i * cell);
      colBand.setAttribute("x", left + j * cell);
      cursor.setAttribute("x", left + j * cell);
      cursor.setAttribute("y", top + i * cell);
      box.classList.add("is-selected");
      rowText.forEach(function (t, k) { t.classList.toggle("is-on", k === i); });
      colText.forEach(function (t, k) { t.classList.toggle("is-on", k === j); });
    }

    function fromEvent(event) {
      var target = event.target && event.target.closest ? event.target.closest(".llm-ix__cell") : null;
      if (target) select(+target.getAttribute("data-i"), +target.getAttribute("data-j"));
    }
    root.addEventListener("pointermove", function (event) { if (event.pointerType === "mouse") fromEvent(event); });
    root.addEventListener("pointerdown", fromEvent);
    plot.addEventListener("focus", function () { if (!at) select(0, 0); });
    plot.addEventListener("keydown", function (event) {
      var moves = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
      var i = at ? at[0] : 0, j = at ? at[1] : 0;
      if (moves[event.key]) {
        select(i + moves[event.key][0], j + moves[event.key][1]);
      } else if (event.key === "Home") {
        select(i, 0);
      } else if (event.key === "End") {
        select(i, C - 1);
      } else {
        return;
      }
      event.preventDefault();
    });

    return function show(next) {
      view = next;
      for (var i = 0; i < R; i++) {
        for (var j = 0; j < C; j++) {
          var level = Math.max(0, Math.min(1, (next.values[i][j] - data.vmin) / span));
          cells[i][j].setAttribute("fill-opacity", level.toFixed(4));
          cells[i][j].classList.toggle("llm-ix__cell--masked", masked(i, j));
        }
      }
      if (at) select(at[0], at[1]);
    };
  }

  // ------------------------------------------------------------------ 柱状图
  function bars(data, body) {
    var n = data.views[0].values.length;
    var W = 340, H = 190, left = 34, right = 6, top = 10, bottom = 24;
    var pw = W - left - right, ph = H - top - bottom, bw = pw / n;
    var y = function (v) { return top + ph * (1 - Math.min(v, data.ymax) / data.ymax); };
    var box = html("div", { "class": "llm-ix__plotbox" }, body);
    html("p", { "class": "llm-ix__axes" }, box, "纵轴：" + data.y_name);
    var root = svg("svg", { viewBox: "0 0 " + W + " " + H, width: W, height: H, role: "img" }, box);
    var label = svg("title", {}, root);
    [0, 0.5, 1].forEach(function (f) {
      var v = f * data.ymax;
      svg("line", { "class": "llm-ix__grid", x1: left, x2: W - right, y1: y(v), y2: y(v) }, root);
      svg("text", { x: left - 5, y: y(v), "text-anchor": "end", "dominant-baseline": "central" }, root, String(v));
    });
    var rects = [];
    for (var k = 0; k < n; k++) {
      rects.push(svg("rect", { "class": "llm-ix__bar", x: left + k * bw + bw * 0.1, y: top, width: bw * 0.8, height: ph },
        root));
    }
    if (data.reference) {
      svg("line", { "class": "llm-ix__reference", x1: left, x2: W - right, y1: y(data.reference.value),
        y2: y(data.reference.value) }, root);
      svg("text", { "class": "llm-ix__small", x: W - right, y: y(data.reference.value) - 4, "text-anchor": "end" }, root,
        data.reference.label);
    }
    svg("text", { x: left + pw / 2, y: H - 6, "text-anchor": "middle" }, root, data.x_name);
    var stats = html("dl", { "class": "llm-ix__stats", "aria-live": "polite" }, body);

    return function show(view) {
      label.textContent = data.y_name + "：" + view.title;
      view.values.forEach(function (v, k) {
        rects[k].style.transform = "scaleY(" + Math.max(0, Math.min(1, v / data.ymax)).toFixed(4) + ")";
      });
      stats.textContent = "";
      (view.stats || []).forEach(function (s) {
        html("dt", {}, stats, s.label);
        html("dd", {}, stats, s.value.toFixed(s.digits === undefined ? 3 : s.digits) + (s.suffix || ""));
      });
    };
  }

  // ------------------------------------------------------------------ 控件与挂载
  function mount(figure) {
    var url = figure.getAttribute("data-llm-data");
    if (!url || figure.getAttribute("data-llm-ready")) return;
    figure.setAttribute("data-llm-ready", "1");
    window.fetch(new URL(url, document.baseURI).href, { credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok) throw new Error(response.status + " " + url);
        return response.json();
      })
      .then(function (data) {
        if (figure.isConnected) build(figure, data);  // 数据到达前读者可能已经换了页
      })
      .catch(function () {
        figure.removeAttribute("data-llm-ready");  // 取不到或画不了：留着静态图，下次换页再试
      });
  }

  function build(figure, data) {
    var draw = { heatmap: heatmap, bars: bars }[data.view];
    if (!draw) throw new Error("unknown view " + data.view);
    var id = "llm-ix-" + (++counter);
    var state = data.controls.map(function (c) { return c.initial || 0; });
    var root = html("div", { "class": "llm-ix llm-ix--" + data.view });
    figure.insertBefore(root, figure.querySelector("figcaption"));
    if (data.note) html("p", { "class": "llm-ix__note" }, root, data.note);
    var controls = html("div", { "class": "llm-ix__controls" }, root);
    var title = html("p", { "class": "llm-ix__title", "aria-live": "polite" }, root);
    var body = html("div", { "class": "llm-ix__body" }, root);
    var show = draw(data, body, id);
    var syncs = [];

    function update() {
      var view = data.views.filter(function (v) {
        return v.at.every(function (a, k) { return a === state[k]; });
      })[0];
      title.textContent = view.title;
      syncs.forEach(function (sync) { sync(); });
      show(view);
    }

    data.controls.forEach(function (control, k) {
      var group = html("div", { "class": "llm-ix__group", role: "group", "aria-labelledby": id + "-c" + k }, controls);
      html("span", { "class": "llm-ix__label", id: id + "-c" + k }, group, control.label);
      if (control.kind === "slider") {
        var last = control.options.length - 1;
        var input = html("input", {
          type: "range", min: "0", max: String(last), step: "1", value: String(state[k]),
          "aria-labelledby": id + "-c" + k
        }, group);
        var output = html("output", { "class": "llm-ix__value", "aria-hidden": "true" }, group);
        input.addEventListener("input", function () { state[k] = +input.value; update(); });
        syncs.push(function () {
          var text = control.label + " = " + control.options[state[k]];
          input.value = String(state[k]);
          input.setAttribute("aria-valuetext", text);
          output.textContent = String(control.options[state[k]]);
        });
      } else {
        var buttons = control.options.map(function (option, m) {
          var button = html("button", { type: "button" }, group, String(option));
          button.addEventListener("click", function () { state[k] = m; update(); });
          return button;
        });
        syncs.push(function () {
          buttons.forEach(function (b, m) { b.setAttribute("aria-pressed", m === state[k] ? "true" : "false"); });
        });
      }
    });
    update();
    figure.classList.add("llm-figure--live");
  }

  function mountAll() {
    document.querySelectorAll("figure.llm-figure[data-llm-view]").forEach(mount);
  }

  // 给 playground.js（浏览器里运行的模型）画注意力用：heatmap(data, 容器, id) 返回 show(view)，数据格式同上
  window.llmFigures = { heatmap: heatmap };

  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(mountAll);  // Material 的即时导航：每换一页重新挂载
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", mountAll);
  } else {
    mountAll();
  }
})();
