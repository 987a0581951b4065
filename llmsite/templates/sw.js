// 离线阅读的 Service Worker。构建时由 llmsite/offline.py 写成站点根目录的 sw.js，并填上版本号；
// 只有读者按了「离线阅读」（docs/assets/javascripts/offline.js）才会注册。预览（mkdocs serve）不写这个文件。
//
// - 下载：页面发来 {type: "precache"}，按 offline.json 把路线上的页面和它们用到的文件存进缓存 llm-offline-<版本>，
//   边下载边把进度发回页面；存储空间不够时发回 {type: "error", quota: true}，已存的不删，在线阅读照常。
// - 读取：站内的 GET 请求先查缓存（下载过的文件、读过的页面），没有再走网络，取到的顺手存进 llm-visited。
// - 更新：新的部署改变版本号，浏览器装上新的 worker。读者下载过离线包，新 worker 先把新版全部下载好，再等页面说
//   「现在换」（{type: "activate"}，由「有更新」的按钮发出）；换上以后删掉旧版的缓存。
"use strict";
const VERSION = "__VERSION__";
const PRECACHE = "llm-offline-" + VERSION;
const VISITED = "llm-visited";
const SCOPE = self.registration.scope;

async function tell(message) {
  const clients = await self.clients.matchAll({ includeUncontrolled: true, type: "window" });
  clients.forEach((client) => client.postMessage(message));
}

async function precache(report) {
  const response = await fetch(new URL("offline.json", SCOPE), { cache: "no-store" });
  if (!response.ok) throw new Error("offline.json: HTTP " + response.status);
  const list = await response.json();
  if (list.version !== VERSION) throw new Error("offline.json 是另一个版本（" + list.version + "）");
  const cache = await caches.open(PRECACHE);
  let done = 0, bytes = 0;
  for (const file of list.files) {
    const url = new URL(file.url, SCOPE);
    if (!(await cache.match(url))) {
      const got = await fetch(url, { cache: "no-store" });
      if (!got.ok) throw new Error(file.url + ": HTTP " + got.status);
      await cache.put(url, got);
    }
    done += 1;
    bytes += file.bytes;
    if (report && (done % 10 === 0 || done === list.files.length)) {
      await report({ type: "progress", done: done, total: list.files.length, bytes: bytes, of: list.bytes });
    }
  }
  return list;
}

function failure(error) {
  const quota = !!error && (error.name === "QuotaExceededError" || /quota/i.test(String(error.message)));
  return { type: "error", quota: quota, message: String((error && error.message) || error) };
}

self.addEventListener("install", (event) => {
  event.waitUntil((async () => {
    const names = await caches.keys();
    const older = names.filter((name) => name.startsWith("llm-offline-") && name !== PRECACHE);
    if (older.length) {
      await precache(null);  // 一次更新：新版全部下载好才安装成功，然后等页面让它接替
    } else {
      await self.skipWaiting();  // 第一次：立刻接管，页面随后发 precache
    }
  })());
});

self.addEventListener("activate", (event) => {
  event.waitUntil((async () => {
    const names = await caches.keys();
    await Promise.all(names.filter((name) => (name.startsWith("llm-offline-") && name !== PRECACHE) || name === VISITED)
      .map((name) => caches.delete(name)));
    await self.clients.claim();
  })());
});

self.addEventListener("message", (event) => {
  const data = event.data || {};
  if (data.type === "precache") {
    event.waitUntil(precache(tell).then((list) => tell({ type: "done", bytes: list.bytes, version: VERSION }),
      (error) => tell(failure(error))));
  } else if (data.type === "activate") {
    self.skipWaiting();
  } else if (data.type === "status") {
    event.waitUntil(caches.has(PRECACHE).then((has) => tell({ type: "status", ready: has, version: VERSION })));
  }
});

self.addEventListener("fetch", (event) => {
  const request = event.request;
  if (request.method !== "GET" || !request.url.startsWith(SCOPE)) return;
  const path = new URL(request.url).pathname;
  if (path.endsWith("/offline.json") || path.endsWith("/sw.js")) return;  // 总是问网络：用来发现新版本
  event.respondWith((async () => {
    const cached = await caches.match(request, { ignoreSearch: true });
    if (cached) return cached;
    const response = await fetch(request);
    if (response.ok && response.type === "basic") {
      const copy = response.clone();
      caches.open(VISITED).then((cache) => cache.put(request, copy)).catch(() => {});  // 存不下就不存
    }
    return response;
  })());
});
