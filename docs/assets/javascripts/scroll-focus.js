// 能横向滚动的区域要能用键盘到达（WCAG 2.1.1；axe-core 规则 scrollable-region-focusable）。
// Material 对代码块已经这样做了；这里补上表格、独立公式、实验输出和手机上的宽图。
// 只在内容真的溢出时加 tabindex="0"（否则每个公式都会多一个 Tab 停靠点），尺寸变化时重新判断。
(function () {
  "use strict";
  var SELECTOR = [
    ".md-typeset__scrollwrap",              // Material 给表格包的滚动容器（由它的脚本生成，构建时还没有）
    ".md-typeset div.arithmatex",           // 独立公式（KaTeX 渲染后才知道多宽）
    ".llm-lab .jp-RenderedText pre",        // 实验的文字输出
    ".md-typeset figure.llm-figure > p"     // 文中插图：窄屏上按原尺寸显示，可以横向滚动
  ].join(",");
  var observer = null;

  function update(el) {
    var overflows = el.scrollWidth > el.clientWidth + 1 || el.scrollHeight > el.clientHeight + 1;
    if (overflows) {
      el.setAttribute("tabindex", "0");
    } else if (el.getAttribute("tabindex") === "0") {
      el.removeAttribute("tabindex");
    }
  }

  function mount() {
    if (observer) observer.disconnect();
    var targets = document.querySelectorAll(SELECTOR);
    if (!("ResizeObserver" in window)) {
      targets.forEach(update);
      return;
    }
    var owner = new Map();  // 被观察的元素 → 它所在的滚动区域
    observer = new ResizeObserver(function (entries) {
      entries.forEach(function (entry) { update(owner.get(entry.target)); });
    });
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
    // Material 在同一次 document$ 里才包表格，等下一帧再找
    window.requestAnimationFrame(mount);
  }

  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(onPage);
  } else {
    document.addEventListener("DOMContentLoaded", onPage);
  }
})();
