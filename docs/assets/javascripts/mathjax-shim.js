// mkdocs-jupyter 的 custom_mathjax_url 指向这里：不加载 MathJax（也就不会去请求 CDN）。
// Notebook 页面里的公式和其他页面一样，由 katex-init.js 用本地的 KaTeX 渲染，只渲染一次。
// scripts/hook_labs.py 会把 mkdocs-jupyter 插入的 <script> 一并去掉，所以正常情况下这个文件不会被请求。
