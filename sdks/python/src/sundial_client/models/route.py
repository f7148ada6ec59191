from enum import Enum


class Route(str, Enum):
    BUSYOVER = "busyover"
    CONSISTENT_HASH = "consistent_hash"
    FAILOVER = "failover"
    FIRST = "first"
    LAST = "last"
    LEAST_FREQUENTLY_USED = "least_frequently_used"
    LEAST_RECENTLY_USED = "least_recently_used"
    RANDOM = "random"
    ROUND_ROBIN = "round_robin"
    SHARDING = "sharding"

    def __str__(self) -> str:
        return str(self.value)
