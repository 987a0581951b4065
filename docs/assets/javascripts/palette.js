// 浅色 / 深色的切换。代替 Material 的配色组件（overrides/partials/palette.html 去掉了它的 data-md-component），
// 做的事一样：选中读者上次的配色（没有选过就按系统的偏好），显示对应的切换按钮，切换时改 <body> 的配色属性、
// 存进 localStorage（Material 的键 __palette，所以 <head> 里它的内联脚本在首次绘制前就套用上次的选择），
// 再更新 <meta name="color-scheme"> 和 <meta name="theme-color">。
// 不同的是：载入时配色没变就不碰 <body>，也不在载入时读计算样式。Material 的组件每次载入都给 <body> 设一个
// 关过渡动画的属性、再读两次计算样式，长文章的整棵样式树因此多算了三遍（bench/README.md，issue 29）。
(function () {
  "use strict";
  var KEY = "__palette";
  var FIELDS = ["media", "scheme", "primary", "accent"];

  function read() {
    try { return window.__md_get ? window.__md_get(KEY) : null; } catch (e) { return null; }  // 存储被禁用
  }

  function save(value) {
    if (window.__md_set) window.__md_set(KEY, value);  // Material 的 __md_set 自己吞掉存储的异常
  }

  function colorOf(input) {
    var color = {};
    FIELDS.forEach(function (key) { color[key] = input.getAttribute("data-md-color-" + key); });
    return color;
  }

  // 上次选的配色；没有选过（或存的东西不对）就取第一个和系统偏好相符的，都不符就取第一个
  function initialIndex(inputs) {
    var stored = read();
    if (stored && typeof stored.index === "number" && stored.index >= 0 && stored.index < inputs.length) {
      return stored.index;
    }
    for (var i = 0; i < inputs.length; i++) {
      var media = inputs[i].getAttribute("data-md-color-media");
      if (media && window.matchMedia && window.matchMedia(media).matches) return i;
    }
    return 0;
  }

  // <meta name="color-scheme">：Material 的样式表给 default 配色 color-scheme: light、给 slate 配色 dark，
  // 这里照着属性直接写，不读计算样式（载入时读它，就要先把整页的样式算一遍）。
  // 载入时它已由 <head> 最后的脚本按同样的规则写好（llmsite/presettle.py），这里通常不用再改
  var SCHEMES = { "default": "light", slate: "dark" };
  function meta(name) {
    var node = document.head.querySelector('meta[name="' + name + '"]');
    if (!node) {
      node = document.createElement("meta");
      node.name = name;
      document.head.appendChild(node);
    }
    return node;
  }

  function updateScheme(scheme) {
    var value = SCHEMES[scheme] || "normal";
    var node = meta("color-scheme");
    if (node.content !== value) node.content = value;
  }

  // <meta name="theme-color">（手机浏览器地址栏的颜色）取页眉的背景色。它不影响页面的样式，
  // 载入时等第一帧画完再读（那时样式已经算好，读它不引起重算）
  function updateThemeColor() {
    var header = document.querySelector("[data-md-component=header]");
    if (!header) return;
    var rgb = (window.getComputedStyle(header).backgroundColor.match(/\d+/g) || []).slice(0, 3);
    if (rgb.length === 3) {
      meta("theme-color").content = "#" + rgb.map(function (v) { return (+v).toString(16).padStart(2, "0"); }).join("");
    }
  }

  // 套用第 index 个配色：只改和现在不同的属性；切换时先关掉过渡动画，下一轮再打开（和 Material 一样）
  function apply(inputs, index, switching) {
    var input = inputs[index], color = colorOf(input), body = document.body;
    // media 不影响样式（样式表里没有用到它）：只有配色真的变了才连它一起写
    var changed = FIELDS.some(function (key) {
      return key !== "media" && body.getAttribute("data-md-color-" + key) !== color[key];
    });
    if (changed) {
      if (switching) body.setAttribute("data-md-color-switching", "");
      FIELDS.forEach(function (key) {
        if (color[key] !== null && body.getAttribute("data-md-color-" + key) !== color[key]) {
          body.setAttribute("data-md-color-" + key, color[key]);
        }
      });
      if (switching) setTimeout(function () { body.removeAttribute("data-md-color-switching"); }, 0);
    }
    input.checked = true;
    for (var i = 0; i < inputs.length; i++) {
      var label = inputs[i].nextElementSibling;
      if (label && label.tagName === "LABEL") label.hidden = i !== index;  // 只显示「切到另一种」的按钮
    }
    return { index: index, color: color };
  }

  function mount(form) {
    if (form.hasAttribute("data-llm-palette-ready")) return;
    form.setAttribute("data-llm-palette-ready", "");
    var inputs = Array.prototype.slice.call(form.querySelectorAll("input[name=__palette]"));
    if (!inputs.length) return;
    updateScheme(apply(inputs, initialIndex(inputs), false).color.scheme);
    window.requestAnimationFrame(function () { setTimeout(updateThemeColor, 0); });
    inputs.forEach(function (input, index) {
      input.addEventListener("change", function () {
        if (!input.checked) return;
        var palette = apply(inputs, index, true);
        save(palette);
        updateScheme(palette.color.scheme);
        updateThemeColor();
      });
    });
    // 按钮是 <label>：键盘按 Enter 时切到下一个配色，焦点跟过去（同 Material）
    form.addEventListener("keydown", function (event) {
      if (event.key !== "Enter") return;
      var now = inputs.findIndex(function (input) { return input.checked; });
      var next = inputs[(Math.max(now, 0) + 1) % inputs.length];
      event.preventDefault();
      next.click();
      next.focus();
    });
  }

  function mountAll() {
    document.querySelectorAll("form[data-llm-palette]").forEach(mount);
  }

  // 页眉在即时导航时不换，所以通常只挂一次；document$ 每换一页通知一次，已挂过的跳过
  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(mountAll);
  } else {
    mountAll();
  }
})();
