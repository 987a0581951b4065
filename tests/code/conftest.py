"""把仓库的 code/ 目录放到 sys.path 最前面，测试里可以直接 `import attention`。"""

from __future__ import annotations

import sys
from pathlib import Path

CODE_DIR = Path(__file__).resolve().parents[2] / "code"
sys.path.insert(0, str(CODE_DIR))
