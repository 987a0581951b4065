// 阅读进度：只存在本机的 localStorage 里，不发请求。格式和「读完」的规则见 ARCHITECTURE.md。
(function () {
  "use strict";
  var KEY = __md_scope.pathname + ".llm-progress", NOSAVE = "浏览器不允许保存进度。";
  var SLUG = /^[a-z0-9]+(-[a-z0-9]+)*$/;
  var unsaved, problem, state, view, note, io, timer;

  function $(sel, root) { return (root || document).querySelectorAll(sel); }
  function on(node, fn, type) { node.addEventListener(type || "click", fn); }
  function say(text) { note.textContent = problem || text; }
  function obj(x, keys) {
    return x && typeof x == "object" && !Array.isArray(x) && Object.keys(x).every(function (k) { return keys.test(k); });
  }
  function empty() { return { version: 1, articles: Object.create(null) }; }

  // 严格检查：一处不对就整份不要
  function parse(text) {
    function each(o, keys, fn) {
      if (!obj(o, keys)) throw 0;
      Object.keys(o).forEach(function (k) { fn(o[k]); });
      Object.setPrototypeOf(o, null);
    }
    try {
      var d = JSON.parse(text);
      if (!obj(d, /^(version|articles)$/) || d.version !== 1) throw 0;
      each(d.articles, SLUG, function (a) {
        if (!obj(a, /^(read|readAt|exercises)$/) || typeof a.read != "boolean" ||
            "readAt" in a && new Date(a.readAt).toISOString() !== a.readAt) throw 0;
        if ("exercises" in a) each(a.exercises, SLUG, function (x) {
          if (!obj(x, /^(correct|attempts)$/) || typeof x.correct != "boolean" ||
              !(Number.isInteger(x.attempts) && x.attempts > 0 && x.attempts <= 1e5)) throw 0;
        });
      });
      return d;
    } catch (e) {
      return null;
    }
  }

  function load() {
    var raw = null, d;
    if (unsaved) problem = NOSAVE;
    else try { raw = localStorage.getItem(KEY); } catch (e) { problem = NOSAVE; }
    d = raw === null ? unsaved || empty() : parse(raw);
    if (!d) problem = "本地保存的进度无法读取，已忽略。";
    return d || empty();
  }
  function write(s) {
    unsaved = problem = null;
    try {
      if (Object.keys(s.articles).length) localStorage.setItem(KEY, JSON.stringify(s));
      else localStorage.removeItem(KEY);
    } catch (e) {
      unsaved = s;
      problem = NOSAVE;
    }
    state = s;
    render();
  }
  function update(slug, fn) {
    var s = load(), a = s.articles[slug] || (s.articles[slug] = { read: false });
    fn(a);
    if (!a.read && !a.exercises) delete s.articles[slug];
    write(s);
  }
  function setRead(yes, text) {
    update(view.slug, function (a) {
      a.read = yes;
      delete a.readAt;
      if (yes) a.readAt = new Date().toISOString();
    });
    say(text);
  }
  function read(slug) { var a = state.articles[slug]; return !!(a && a.read); }
  function slugOf(path) {
    var m = /\/articles\/([a-z0-9]+(-[a-z0-9]+)*)\/$/.exec(path);
    return m ? m[1] : "";
  }

  function render() {
    var ex = view && (state.articles[view.slug] || {}).exercises || {};
    // 链接后加 ✓；目录的 # 和收起的分组不算；手机上当前页是 label
    var links = ".md-nav--primary :not(.md-nav__item--pruned) > .md-nav__link, [data-llm-route-article] a";
    $(links).forEach(function (n) {
      var a = n.href ? n : n.parentNode.querySelector(":scope > a");
      if (n.lastChild.className == "llm-read-mark") n.lastChild.remove();
      if (a && read(!a.hash && slugOf(a.pathname))) {
        n.insertAdjacentHTML("beforeend", '<span class="llm-read-mark"><span class="llm-sr">已读</span></span>');
      }
    });
    $("[data-llm-route-stage]").forEach(function (ol) {
      var bar = ol.previousElementSibling;
      bar.hidden = false;
      bar.querySelector("span").textContent = bar.querySelector("progress").value = $(".llm-read-mark", ol).length;
    });
    $("[data-llm-exercise]").forEach(function (n) {
      var x = ex[n.dataset.llmExercise];
      n.classList.toggle("llm-exercise--solved", !!(x && x.correct));
    });
    if (view) {
      view.button.textContent = read(view.slug) ? "已读 ✓ · 标为未读" : "读完了";
      view.button.classList.toggle("llm-btn--on", read(view.slug));
    }
    if (problem && note) say();
  }

  // 自动记下：文末在视口里停留 2 秒（滚动过）或 30 秒（没滚动过的短文）
  function check() {
    if (!view || !view.auto || !view.seen || read(view.slug)) timer = clearTimeout(timer);
    else timer = timer || setTimeout(setRead, view.scrolled ? 2000 : 30000, true, "已记为读完。");
  }

  function mount() {
    var box = $(".llm-read, [data-llm-progress]")[0], file = box && box.querySelector("input");
    if (io) io.disconnect();
    io = view = timer = clearTimeout(timer);
    note = box && box.querySelector("[role=status]");
    problem = null;
    state = load();
    if (box) box.hidden = false;
    if (box && box.dataset.llmArticle) {
      view = { slug: box.dataset.llmArticle, button: box.querySelector("button"), auto: true, at: Date.now() };
      on(view.button, function () {
        view.auto = false;  // 这一页不再自动记
        check();
        setRead(!read(view.slug), read(view.slug) ? "已标为未读。" : "已记为读完。");
      });
      io = new IntersectionObserver(function (es) {
        view.seen = es.pop().isIntersecting;
        check();
      });
      io.observe(box);
    }
    if (file) {
      var link = document.createElement("a");
      on(file, function () {
        var f = file.files[0];
        file.value = "";
        if (f) (f.size > 1e6 ? Promise.resolve() : f.text()).catch(String).then(function (text) {
          var d = parse(text);
          // 导入是整份替换，不是合并：本机已有进度时先问一声
          if (d && Object.keys(state.articles).length &&
              !confirm("导入会用文件里的进度替换本机现有的全部阅读进度，继续吗？")) return say("没有导入，本机的进度不变。");
          if (d) write(d);
          say(d ? "已导入。" : "导入失败：不是本站导出的进度文件。");
        });
      }, "change");
      on(box.querySelector("[data-llm-do=import]"), function () { file.click(); });
      on(box.querySelector("[data-llm-do=export]"), function () {
        URL.revokeObjectURL(link.href);
        link.href = URL.createObjectURL(new Blob([JSON.stringify(state, null, 2)]));
        link.download = "llm-study-progress.json";
        link.click();
      });
      on(box.querySelector("[data-llm-do=reset]"), function () {
        if (confirm("清除本机保存的全部阅读进度？")) {
          write(empty());
          say("已清除。");
        }
      });
    }
    render();
  }

  addEventListener("scroll", function () {
    if (view && !view.scrolled && Date.now() - view.at > 500) {  // 刚打开时的恢复滚动不算
      view.scrolled = true;
      timer = clearTimeout(timer);
      check();
    }
  }, { passive: true });

  on(document, function (e) {
    var d = e.detail, slug = d && typeof d.page == "string" && slugOf(d.page);
    if (slug && typeof d.id == "string" && SLUG.test(d.id) && typeof d.correct == "boolean") {
      update(slug, function (a) {
        var ex = a.exercises = a.exercises || Object.create(null), x = ex[d.id] = ex[d.id] || { attempts: 0 };
        x.attempts = Math.min(x.attempts + 1, 1e5);
        x.correct = x.correct || d.correct;
      });
    }
  }, "llm:exercise");

  if (window.document$) document$.subscribe(mount);
  else on(document, mount, "DOMContentLoaded");
})();
