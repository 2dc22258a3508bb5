from typing import Optional

__version__ = '2.13.0+cu130'
debug = False
cuda: Optional[str] = '13.0'
git_version = 'placeholder'
hip: Optional[str] = None
xpu: Optional[str] = None
