// 文章页：每个二级标题下的「提问」开 Discussions 的 Q&A 新帖，选中正文后的「纠错」开 correction.md 的新 Issue。
// 仓库来自文章头的 data-llm-repo；只是链接，不发请求；值经 URLSearchParams 编码，文字只用 textContent。
// 链接放进构建时写好的空位（二级标题后的空 <p class="llm-ask">、文末的 <div class="llm-fix" hidden>，
// llmsite/presettle.py）：往 <article> 里直接插入元素会让整篇的样式重算一遍（issue 29），填进空位不会。
(function () {
  "use strict";
  var MAX = 300;  // 引文的字数上限
  var ctx = null, bar = null, fix = null;

  function el(tag, cls, text) {
    var n = document.createElement(tag);
    n.className = cls;
    n.textContent = text;
    return n;
  }

  function link(a, path, params) {
    var url = new URL(ctx.repo + path);
    Object.keys(params).forEach(function (k) { url.searchParams.set(k, params[k]); });
    a.href = url.href;
    a.target = "_blank";
    a.rel = "noopener";
  }

  // 标题的文字：去掉「¶」，公式留 TeX
  function text(h) {
    if (!h) return "（开头）";
    var c = h.cloneNode(true);
    c.querySelectorAll(".headerlink, .katex-html, semantics > :not(annotation)").forEach(function (n) { n.remove(); });
    return c.textContent.replace(/\s+/g, " ").trim();
  }

  function here(h) {
    return location.origin + location.pathname + (h && h.id ? "#" + h.id : "");
  }

  function mount() {
    var head = document.querySelector(".llm-article-header[data-llm-repo]");
    var repo = head ? head.getAttribute("data-llm-repo").replace(/\/+$/, "") : "";
    ctx = null;
    if (!/^https?:\/\//.test(repo)) return;
    var article = head.closest("article");
    var title = head.querySelector("h1").textContent.trim();
    var heads = [].filter.call(article.querySelectorAll("h2"), function (h) { return h.id !== "__comments"; });
    ctx = { repo: repo, title: title, article: article, heads: heads };
    heads.forEach(function (h) {
      var p = h.nextElementSibling;
      if (p && p.matches(".llm-ask")) {
        if (p.firstChild) return;  // 已经挂过
      } else {  // 没有空位（例如别处生成的页面）：自己插入
        p = el("p", "llm-ask", "");
        h.after(p);
      }
      var name = text(h), a = el("a", "", "提问");
      a.appendChild(el("span", "llm-sr", "：" + name));
      link(a, "/discussions/new", {
        category: "q-a",
        title: title + "：" + name,
        body: "文章：" + title + "\n小节：" + name + "\n页面：" + here(h) + "\n\n（你的问题）\n"
      });
      p.appendChild(a);
    });
    bar = article.querySelector(".llm-fix");
    if (!bar) {
      bar = el("div", "llm-fix", "");
      article.appendChild(bar);
    }
    bar.hidden = true;
    bar.textContent = "";
    fix = el("a", "", "纠错");
    // 选中文字之前也是一个真链接（只带文章名）：没有 href 的 <a> 不是链接，搜索引擎和读屏软件都不认
    link(fix, "/issues/new", { template: "correction.md", title: "[纠错] " + title });
    fix.addEventListener("mousedown", function (e) { e.preventDefault(); });  // 保住选区
    bar.appendChild(fix);
  }

  document.addEventListener("selectionchange", function () {
    if (!ctx) return;
    var sel = getSelection(), r = sel.rangeCount && sel.getRangeAt(0);
    var quote = r ? sel.toString().replace(/\n{3,}/g, "\n\n").trim() : "";
    bar.hidden = !quote || !ctx.article.contains(r.commonAncestorContainer) || bar.contains(r.startContainer);
    if (bar.hidden) return;
    var chars = Array.from(quote), h = null;
    if (chars.length > MAX) quote = chars.slice(0, MAX).join("") + "……";
    ctx.heads.forEach(function (x) {  // 选区前最后一个标题
      if (x.compareDocumentPosition(r.startContainer) & Node.DOCUMENT_POSITION_FOLLOWING) h = x;
    });
    link(fix, "/issues/new", {
      template: "correction.md",
      title: "[纠错] " + ctx.title + "：" + text(h),
      body: "## 原文\n\n> " + quote.replace(/\n/g, "\n> ") + "\n\n页面：" + here(h) + "\n小节：" + text(h) +
        "\n\n## 应该怎么改\n\n"
    });
  });

  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(mount);
  } else {
    document.addEventListener("DOMContentLoaded", mount);
  }
})();
