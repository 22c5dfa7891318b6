"""The in-memory bound of the plugin's answers, digests and analyses: one LRU map sized in bytes."""

from __future__ import annotations

import collections


class SizedLRU:
    """A least-recently-used map bounded by the total size of its values (``sizeof``, default len)."""

    def __init__(self, limit: int, sizeof=len):
        self.limit = limit
        self.size = 0
        self._sizeof = sizeof
        self._items: "collections.OrderedDict[object, object]" = collections.OrderedDict()

    def get(self, key):
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def put(self, key, value) -> None:
        n = self._sizeof(value)
        if n > self.limit:
            return
        self.discard(key)
        self._items[key] = value
        self.size += n
        while self.size > self.limit:
            _, dropped = self._items.popitem(last=False)
            self.size -= self._sizeof(dropped)

    def discard(self, key) -> None:
        old = self._items.pop(key, None)
        if old is not None:
            self.size -= self._sizeof(old)
