"""Stockade guest image builder (images/build-image.py is the entry point).

Python 3 standard library only; it drives Debian's own tools (apt-get, dpkg-deb,
mkfs.ext4, debugfs, depmod) and never names a mirror: every package comes through the
build machine's apt configuration.
"""
