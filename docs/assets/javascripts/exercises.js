// 文末的练习（llmsite/exercises/ 在构建时生成）。答案已由 code/ 算好，写在练习的 data-llm-check 里；
// 这里只做四件事：显示作答的表单，判断对错，在 aria-live 区域读出结果，作答后展开解析。
// 没有脚本时表单保持 hidden，题目、选项和 <details>（答案与解析）照样能读。
//
// 解析放在哪里：<details> 一直留在页面上、默认收起，排在表单后面。卡住的读者可以自己展开它，
// 内容不会被锁在脚本后面；但自然的顺序是先作答、再看解析：每次提交（对或错）之后脚本把它展开。
// 每次判断之后发出 llm:exercise 事件（阅读进度由 progress.js 记录，这里不读也不写存储）。
(function () {
  "use strict";

  // 读者写的数：小数、分数（1/4）、科学记数法、千位分隔符；全角数字和符号先换成半角
  function toNumber(raw) {
    var s = raw.replace(/[\uff01-\uff5e]/g, function (c) { return String.fromCharCode(c.charCodeAt(0) - 0xfee0); })
      .replace(/[\u2212\u2013]/g, "-").replace(/。/g, ".").replace(/[\s\u3000]/g, "");
    if (/^[+-]?\d{1,3}(,\d{3})+(\.\d+)?$/.test(s)) s = s.replace(/,/g, "");
    var n = "(?:\\d+\\.?\\d*|\\.\\d+)(?:e[+-]?\\d+)?";
    var m = new RegExp("^([+-]?" + n + ")(?:/(" + n + "))?$", "i").exec(s);
    if (!m) return NaN;
    var v = parseFloat(m[1]);
    if (m[2] !== undefined) v = parseFloat(m[2]) ? v / parseFloat(m[2]) : NaN;
    return v;
  }

  function mount(box) {
    if (box.getAttribute("data-llm-ready")) return;  // 同一个节点只绑定一次
    var data;
    try { data = JSON.parse(box.getAttribute("data-llm-check")); } catch (e) { return; }
    box.setAttribute("data-llm-ready", "1");
    var id = box.getAttribute("data-llm-exercise");
    var form = box.querySelector(".llm-ex__form");
    var input = form.querySelector("input");
    var result = box.querySelector(".llm-ex__result");
    var details = box.querySelector(".llm-ex__answer");
    var radios = [];
    if (data.kind === "choice") {
      // 每个选项前面放一个单选框；选项的内容（连同渲染好的公式）整个移进 <label> 里的一个 <span>，不复制。
      // 选项的列表成为以题目命名的一组单选框，读屏软件读选项时也读出题目
      var options = box.querySelector(".llm-ex__options"), question = box.querySelector(".llm-ex__question");
      options.setAttribute("role", "radiogroup");
      if (question && question.id) options.setAttribute("aria-labelledby", question.id);
      [].forEach.call(box.querySelectorAll(".llm-ex__options > li"), function (li, i) {
        li.setAttribute("role", "none");
        var label = document.createElement("label");
        var radio = document.createElement("input");
        var text = document.createElement("span");
        radio.type = "radio";
        radio.name = "llm-ex-" + id;
        radio.value = String(i);
        while (li.firstChild) text.appendChild(li.firstChild);
        label.appendChild(radio);
        label.appendChild(text);
        li.appendChild(label);
        radios.push(radio);
      });
    }
    form.hidden = false;

    // 「去图里看看」是页内链接，但不能交给浏览器或 Material 去跳：Material 的即时导航在页面载入后的第一次
    // 页内跳转（点击，或者浏览器原生跳转触发的 popstate）时会重新下载本页、换掉正文，读者刚展开的解析
    // 随之收起，跳转还要等下载完。这里自己滚到图、把焦点移到图上（读屏软件从图读起），作答的状态留着。
    var jump = box.querySelector("a.llm-ex__figure");
    if (jump) jump.addEventListener("click", function (event) {
      var figure = document.getElementById(decodeURIComponent(jump.hash.slice(1)));
      if (!figure) return;  // 页面上没有这张图：照普通链接处理
      event.preventDefault();
      event.stopPropagation();
      if (!figure.hasAttribute("tabindex")) figure.setAttribute("tabindex", "-1");
      figure.scrollIntoView({ block: "start" });
      figure.focus({ preventScroll: true });
    });

    function say(text, right) {
      result.textContent = text;
      result.className = "llm-ex__result " + (right === undefined ? "" : right ? "is-right" : "is-wrong");
    }

    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var right;
      if (data.kind === "number") {
        var v = toNumber(input.value);
        if (isNaN(v)) {
          say("没看懂这个数：请按输入框下面的写法重新填写。");
          return;
        }
        right = Math.abs(v - data.answer) <= data.tolerance + 1e-9 * Math.max(1, Math.abs(data.answer));
      } else {
        var picked = radios.filter(function (r) { return r.checked; })[0];
        if (!picked) {
          say("先选一项。");
          return;
        }
        right = +picked.value === data.answer;
      }
      var verb = data.verb || "答对";
      say(right ? verb + "了。答案是 " + data.display + "。解析已在下方展开。"
        : "没有" + verb + "。答案是 " + data.display + "，解析已在下方展开。", right);
      details.open = true;
      document.dispatchEvent(new CustomEvent("llm:exercise", {
        detail: { page: location.pathname, id: id, correct: right }
      }));
    });
  }

  function mountAll() {
    document.querySelectorAll("[data-llm-exercise][data-llm-check]").forEach(mount);
  }

  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(mountAll);  // Material 的即时导航：每换一页挂载新页面上的练习
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", mountAll);
  } else {
    mountAll();
  }
})();
