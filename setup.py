from setuptools import setup

setup(cffi_modules=["bpe_cffi/_build.py:ffibuilder"])
