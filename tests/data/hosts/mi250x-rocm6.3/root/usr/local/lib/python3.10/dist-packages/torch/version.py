from typing import Optional

__version__ = '2.4.1+rocm6.1'
debug = False
cuda: Optional[str] = None
git_version = 'placeholder'
hip: Optional[str] = '6.1.40091-a8dbc0c19'
xpu: Optional[str] = None
