// 能横向滚动的区域要能用键盘到达（WCAG 2.1.1；axe-core 规则 scrollable-region-focusable）。
// Material 对代码块已经这样做了；这里补上表格、独立公式和手机上的宽图（实验的文字输出在构建时就带 tabindex）。
// 只在内容真的溢出时加 tabindex="0"（否则每个公式都会多一个 Tab 停靠点），尺寸或字体变化时重新判断。
// 每页第一次判断完，<body> 上的 data-llm-scroll-focus 为 "ready"（测试等它，和等公式渲染一样）。
(function () {
  "use strict";
  var SELECTOR = [
    ".md-typeset__scrollwrap",              // Material 给表格包的滚动容器（由它的脚本生成，构建时还没有）
    ".md-typeset div.arithmatex",           // 独立公式（构建时已渲染；多宽取决于字体和屏幕）
    ".md-typeset figure.llm-figure > p"     // 文中插图：窄屏上按原尺寸显示，可以横向滚动
  ].join(",");
  var observer = null;
  var targets = [];

  function update(el) {
    var overflows = el.scrollWidth > el.clientWidth + 1 || el.scrollHeight > el.clientHeight + 1;
    if (overflows) {
      el.setAttribute("tabindex", "0");
    } else if (el.getAttribute("tabindex") === "0") {
      el.removeAttribute("tabindex");
    }
  }

  function ready() {
    document.body.setAttribute("data-llm-scroll-focus", "ready");
  }

  function mount() {
    if (observer) observer.disconnect();
    targets = Array.prototype.slice.call(document.querySelectorAll(SELECTOR));
    if (!("ResizeObserver" in window)) {
      targets.forEach(update);
      ready();
      return;
    }
    var owner = new Map();  // 被观察的元素 → 它所在的滚动区域
    observer = new ResizeObserver(function (entries) {
      entries.forEach(function (entry) { update(owner.get(entry.target)); });
      ready();  // 观察开始时每个元素都会回调一次：这一批处理完，每个区域都判断过了
    });
    if (!targets.length) ready();
    targets.forEach(function (el) {
      owner.set(el, el);
      observer.observe(el);
      // 内容变宽时区域本身的尺寸不变：也观察它的子元素（公式渲染完、图片载入后）
      Array.prototype.forEach.call(el.children, function (child) {
        owner.set(child, el);
        observer.observe(child);
      });
    });
  }

  function onPage() {
    document.body.removeAttribute("data-llm-scroll-focus");
    // Material 在同一次 document$ 里才包表格，等下一帧再找
    window.requestAnimationFrame(mount);
  }

  // 换了字体（例如系统字体后到）时文字变宽，区域的尺寸却可能不变，ResizeObserver 不会回调：再判断一次
  if (document.fonts && typeof document.fonts.addEventListener === "function") {
    document.fonts.addEventListener("loadingdone", function () { targets.forEach(update); });
  }

  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(onPage);
  } else {
    document.addEventListener("DOMContentLoaded", onPage);
  }
})();
