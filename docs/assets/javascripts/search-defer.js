// 搜索索引等读者第一次打开搜索时再下载（issue 28、29）。
// Material 的脚本一启动就用 XMLHttpRequest 下载 search/search_index.json（本站约 120 kB gzip，文章越多越大），
// 在主线程上解析，再交给搜索的 Worker；它没有提供推迟这一步的选项或事件。
// 这个脚本在 Material 的脚本之前运行（overrides/main.html 的 scripts 块），只做一件事：
// 把对索引的那一次请求留住，等读者点开、聚焦搜索框或按快捷键时再发出去。留住之后立刻还原 XMLHttpRequest，
// 别的请求都不经过这里；页面加载完还没有遇到那次请求（Material 换了写法），也还原，搜索照常工作。
// 网址带 ?q=（直接打开搜索）或 ?h=（高亮搜索词，要用索引里的分词设置）时照常立刻下载。
(function () {
  "use strict";
  var params = new URLSearchParams(window.location.search);
  if (params.has("q") || params.has("h") || typeof XMLHttpRequest === "undefined") return;

  var INDEX = /\/search\/search_index\.json$/;
  var QUERY = '[data-md-component="search-query"]';
  var TOGGLE = "__search";
  var proto = XMLHttpRequest.prototype;
  var originalOpen = proto.open;
  var originalSend = proto.send;
  var indexRequests = new WeakSet();
  var held = null;  // {xhr, args}：留住的那次请求
  var released = false;

  function restore() {
    if (proto.open === patchedOpen) proto.open = originalOpen;
    if (proto.send === patchedSend) proto.send = originalSend;
  }

  function patchedOpen(method, url) {
    var path = String(url).split(/[?#]/)[0];
    if (INDEX.test(path)) indexRequests.add(this);
    return originalOpen.apply(this, arguments);
  }

  function patchedSend() {
    if (!indexRequests.has(this)) return originalSend.apply(this, arguments);
    restore();
    if (released) return originalSend.apply(this, arguments);
    held = { xhr: this, args: arguments };
    document.documentElement.setAttribute("data-llm-search-index", "deferred");
  }

  function release() {
    if (released) return;
    released = true;
    restore();
    document.removeEventListener("focusin", onFocus, true);
    document.removeEventListener("change", onToggle, true);
    document.removeEventListener("pointerdown", onPointer, true);
    document.documentElement.setAttribute("data-llm-search-index", "requested");
    if (held) {
      var request = held;
      held = null;
      originalSend.apply(request.xhr, request.args);
    }
  }

  function onFocus(event) {
    if (event.target instanceof Element && event.target.matches(QUERY)) release();
  }

  function onToggle(event) {
    if (event.target instanceof HTMLInputElement && event.target.id === TOGGLE && event.target.checked) release();
  }

  // 手指按到搜索按钮上就开始下载，比等它松开、搜索框聚焦早一点
  function onPointer(event) {
    var target = event.target instanceof Element ? event.target : null;
    if (target && target.closest('label[for="' + TOGGLE + '"], ' + QUERY)) release();
  }

  proto.open = patchedOpen;
  proto.send = patchedSend;
  document.addEventListener("focusin", onFocus, true);
  document.addEventListener("change", onToggle, true);
  document.addEventListener("pointerdown", onPointer, true);
  window.addEventListener("load", restore);
})();
