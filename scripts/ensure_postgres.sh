#!/bin/sh
# Make sure the PostgreSQL server binaries the tests start are on this machine: look on
# PATH and where distributions put them (Debian: /usr/lib/postgresql/<ver>/bin); when none
# is found and we are root, install Debian's postgresql package.
set -e
found() {
    command -v initdb >/dev/null 2>&1 && command -v postgres >/dev/null 2>&1 && return 0
    for d in /usr/lib/postgresql/*/bin /usr/local/pgsql/bin /usr/pgsql-*/bin; do
        [ -x "$d/initdb" ] && [ -x "$d/postgres" ] && return 0
    done
    return 1
}
if found; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing the PostgreSQL server for the tests (apt-get install postgresql)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    found && exit 0
fi
echo "no PostgreSQL server binaries (initdb, postgres) found; install PostgreSQL" >&2
exit 1
