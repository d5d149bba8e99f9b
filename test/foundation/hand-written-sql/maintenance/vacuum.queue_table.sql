vacuum (skip_locked, index_cleanup on) "<queue table>"
