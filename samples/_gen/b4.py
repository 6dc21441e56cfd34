from common import *  # noqa
from registry import bundle
