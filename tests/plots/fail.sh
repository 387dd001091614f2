#!/bin/sh
# A CTest stand-in for a test whose dependency is missing: says why and fails (exit 1), so the
# gap is seen. Configure with -DHDB_ALLOW_NO_PLOTS=ON to report it as skipped instead (skip.sh).
echo "FAIL: $*" >&2
exit 1
