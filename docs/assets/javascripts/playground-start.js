// 文章里「可以运行的模型」的入口（很小，每页都加载）。构建时标记 <!-- playground: 名字 --> 换成一个隐藏的
// <div class="llm-pg">（llmsite/mkdocs/playground.py）；这里把它显示出来，放一个「载入模型」按钮。
// 读者按下之后才加载 playground.js、说明文件和权重：不按就一个字节也不多下载。没有脚本时 div 一直隐藏，
// 文中的静态插图照常显示。Material 的即时导航换页后，document$ 再通知一次，新页面上的 div 再挂一次。
(function () {
  "use strict";
  var here = document.currentScript ? document.currentScript.src : "";
  var loading = null;

  function loadScript() {
    if (window.llmPlayground) return Promise.resolve();
    if (!loading) {
      loading = new Promise(function (resolve, reject) {
        var script = document.createElement("script");
        script.src = new URL("playground.js", here || document.baseURI).href;  // 同源：CSP 的 script-src 'self'
        script.onload = resolve;
        script.onerror = function () { loading = null; script.remove(); reject(new Error("playground.js")); };
        document.head.appendChild(script);
      });
    }
    return loading;
  }

  function size(bytes) {
    return (bytes / 1e6).toFixed(1) + " MB";
  }

  function setup(box) {
    if (box.getAttribute("data-llm-pg-ready")) return;
    box.setAttribute("data-llm-pg-ready", "1");
    var bytes = +box.getAttribute("data-llm-bytes") || 0;
    var params = +box.getAttribute("data-llm-params") || 0;
    var compare = +box.getAttribute("data-llm-compare") || 0;  // 并排比较几个模型（同一个词表、同一个任务）
    var start = document.createElement("div");
    start.className = "llm-pg__start";
    var text = document.createElement("p");
    text.textContent = compare
      ? "在浏览器里并排运行这 " + compare + " 个训练好的模型（各 " + params.toLocaleString("zh-CN") + " 个参数）。按下按钮才下载" +
        "它们的权重，共约 " + size(bytes) + "；计算全在你的设备上进行，不把输入发给任何人。"
      : "在浏览器里运行这个训练好的模型（" + params.toLocaleString("zh-CN") + " 个参数）。按下按钮才下载它的权重，约 " +
        size(bytes) + "；计算全在你的设备上进行，不把输入发给任何人。";
    var button = document.createElement("button");
    button.type = "button";
    button.className = "llm-pg__btn llm-pg__btn--primary llm-pg__load";
    button.textContent = compare ? "载入 " + compare + " 个模型" : "载入模型";
    var status = document.createElement("p");
    status.className = "llm-pg__status";
    status.setAttribute("role", "status");
    button.addEventListener("click", function () {
      // 不用 disabled：禁用的按钮会丢掉焦点，键盘用户就不知道自己在哪了。载入时再按不起作用
      if (button.getAttribute("aria-disabled") === "true") return;
      button.setAttribute("aria-disabled", "true");
      status.textContent = "正在载入……";
      loadScript().then(function () {
        return window.llmPlayground.mount(box);
      }).then(function () {
        button.removeAttribute("aria-disabled");
      }, function () {
        button.removeAttribute("aria-disabled");
        status.textContent = "演示的脚本没有载入（网络出错？）。可以再按一次试试；文章的其余部分不受影响。";
      });
    });
    start.appendChild(text);
    start.appendChild(button);
    start.appendChild(status);
    box.appendChild(start);
    box.hidden = false;
  }

  function setupAll() {
    document.querySelectorAll("div.llm-pg[data-llm-playground]").forEach(setup);
  }

  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(setupAll);
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", setupAll);
  } else {
    setupAll();
  }
})();
