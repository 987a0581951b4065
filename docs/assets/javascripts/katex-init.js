// 用本地的 KaTeX 渲染公式。配合 Material 的即时导航：每次换页只渲染一次。
(function () {
  "use strict";
  var options = {
    delimiters: [
      { left: "$$", right: "$$", display: true },
      { left: "\\[", right: "\\]", display: true },
      { left: "\\(", right: "\\)", display: false },
      { left: "$", right: "$", display: false }
    ],
    throwOnError: false,
    ignoredClasses: ["llm-no-math"]
  };

  function render(root) {
    // pymdownx.arithmatex（generic 模式）把公式放在 .arithmatex 里；Notebook 页面里是普通文本
    var targets = root.querySelectorAll(".arithmatex, .jp-RenderedMarkdown, .jp-RenderedHTMLCommon");
    targets.forEach(function (el) {
      if (el.dataset.katexDone === "1") return;
      window.renderMathInElement(el, options);
      el.dataset.katexDone = "1";
    });
  }

  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(function () { render(document.body); });
  } else {
    document.addEventListener("DOMContentLoaded", function () { render(document.body); });
  }
})();
