// 页脚的「离线阅读」：读者按下以后才注册本站的 Service Worker（站点根目录的 sw.js，由 llmsite/offline.py 在构建时写出），
// 先说清要下载多少，再把路线上的页面和它们用到的文件存进浏览器；之后断网也能读。新的部署到来时显示「有更新」。
// 不向本站以外的任何地址发请求。预览（mkdocs serve，页面里有 livereload 脚本）不注册，预览的页面总是新的。
(function () {
  "use strict";
  var KEY = "llm-offline";  // localStorage：读者开启过离线阅读
  var sw = navigator.serviceWorker;

  function mb(bytes) { return (bytes / 1e6).toFixed(1) + " MB"; }  // 1 MB = 10^6 字节，和模型演示的写法一样
  function remembered() { try { return localStorage.getItem(KEY) === "1"; } catch (e) { return false; } }
  function remember(on) {
    try { if (on) localStorage.setItem(KEY, "1"); else localStorage.removeItem(KEY); } catch (e) { /* 存不下只影响提示 */ }
  }
  // 预览服务器（mkdocs serve、python -m llmsite serve）在页面末尾内联一段 livereload 脚本，定义全局的 livereload
  function preview() { return typeof window.livereload === "function" || !!document.querySelector('script[src*="livereload"]'); }

  function mount(box) {
    if (box.dataset.llmMounted) return;
    box.dataset.llmMounted = "1";
    var button = box.querySelector("button");
    var status = box.querySelector("[role=status]");
    var root = new URL(box.getAttribute("data-llm-offline-root"), location.href);
    function say(text) { status.textContent = text; }
    if (!sw || !window.caches || preview()) return;  // 不支持，或是预览：保持隐藏
    box.hidden = false;
    var pending = null;  // 确认前取到的清单

    sw.addEventListener("message", function (event) {
      var data = event.data || {};
      if (data.type === "progress") say("正在下载：" + data.done + " / " + data.total + " 个文件（" + mb(data.bytes) + "）");
      if (data.type === "done") { remember(true); say("已可离线阅读：路线上的文章和实验都存在这个浏览器里（" + mb(data.bytes) + "）。"); button.hidden = true; }
      if (data.type === "error") {
        button.disabled = false;
        say(data.quota ? "浏览器给本站的存储空间不够，没能存下离线包；在线阅读不受影响。"
          : "下载离线包失败（" + data.message + "）；在线阅读不受影响，可以稍后再试。");
      }
      if (data.type === "status" && data.ready) { button.hidden = true; say("已可离线阅读。"); }
    });

    button.addEventListener("click", function () {
      if (pending) return start();
      button.disabled = true;
      fetch(new URL("offline.json", root), { cache: "no-store" }).then(function (r) {
        if (!r.ok) throw new Error("HTTP " + r.status);
        return r.json();
      }).then(function (list) {
        if (!list || !Array.isArray(list.files) || typeof list.bytes !== "number") throw new Error("清单格式不对");
        pending = list;
        button.disabled = false;
        button.textContent = "下载 " + mb(list.bytes);
        say("离线阅读要下载 " + list.files.length + " 个文件，共约 " + mb(list.bytes) + "（未压缩）。再按一次开始。");
      }).catch(function (error) {
        button.disabled = false;
        say("取不到离线包的清单（" + error.message + "），请联网后再试。");
      });
    });

    function start() {
      button.disabled = true;
      say("正在准备下载……");
      sw.register(new URL("sw.js", root), { scope: root.pathname }).then(function () {
        return sw.ready;
      }).then(function (registration) {
        registration.active.postMessage({ type: "precache" });
      }).catch(function (error) {
        button.disabled = false;
        say("这个浏览器不能开启离线阅读（" + error.message + "）；在线阅读不受影响。");
      });
    }

    if (!remembered()) return;
    sw.getRegistration(root.pathname).then(function (registration) {
      if (!registration) { remember(false); return; }
      if (registration.active) registration.active.postMessage({ type: "status" });
      function offer(worker) {
        var update = document.createElement("button");
        update.type = "button";
        update.className = "md-button llm-offline__update";
        update.textContent = "有更新：重新加载";
        update.addEventListener("click", function () {
          sw.addEventListener("controllerchange", function () { location.reload(); });
          worker.postMessage({ type: "activate" });
        });
        box.appendChild(update);
        say("网站有新版本，离线包已经更新好。");
      }
      if (registration.waiting) offer(registration.waiting);
      registration.addEventListener("updatefound", function () {
        var next = registration.installing;
        if (next) next.addEventListener("statechange", function () { if (next.state === "installed" && sw.controller) offer(next); });
      });
    }).catch(function () { /* 取不到注册信息：只是不显示状态 */ });
  }

  function scan() { document.querySelectorAll("[data-llm-offline-root]").forEach(mount); }
  if (window.document$ && typeof window.document$.subscribe === "function") window.document$.subscribe(scan);
  else document.addEventListener("DOMContentLoaded", scan);
})();
