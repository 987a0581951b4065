// 搜索结果里去掉零宽空格（U+200B）。
// Material 的搜索插件构建索引时用 jieba 分词，在词与词之间插入零宽空格，浏览器里再按它切词；
// 结果的标题和摘要直接取自索引，于是也带着这些字符：看不见，但复制标题时会一起复制走，
// 读屏软件也可能在词间停顿。索引本身不能去掉它们（去掉后标题里的中文词就搜不到了），
// Material 也没有单独的“显示用标题”，所以在结果渲染之后清理显示出来的文字，不改 Material 的脚本。
(function () {
  "use strict";
  var ZWSP = /\u200b/g;
  var observer = null;

  function clean(root) {
    var walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (var node = walker.nextNode(); node; node = walker.nextNode()) {
      if (node.nodeValue.indexOf("\u200b") !== -1) node.nodeValue = node.nodeValue.replace(ZWSP, "");
    }
  }

  function mount() {
    var list = document.querySelector("[data-md-component=search-result] .md-search-result__list");
    if (!list || !("MutationObserver" in window)) return;
    if (observer) observer.disconnect();
    // 只看增删节点（Material 每次搜索都重新生成结果）；改文字不触发，所以不会自己触发自己
    observer = new MutationObserver(function () { clean(list); });
    observer.observe(list, { childList: true, subtree: true });
    clean(list);
  }

  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(mount);
  } else {
    document.addEventListener("DOMContentLoaded", mount);
  }
})();
