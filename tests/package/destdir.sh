#!/bin/bash
# tests/package/destdir.sh DESTDIR - run in a build tree configured as
# README.md's "Install" section says (--prefix=/usr/local --sysconfdir=/etc
# --with-nginx-module --with-nginx-moduledir=/usr/lib/nginx/modules):
# `make install DESTDIR=...`, then checks that every file the section
# promises is there, that the installed programs run, that both systemd
# units pass systemd-analyze verify (pointed at the staged files), that
# `make uninstall` leaves no file behind, and that an administrator's
# edited configuration survives a re-install.  Removes DESTDIR (and the
# group ringbloom, if it made it).  Needs root.
# Prints "Checks: N, Failures: F".
set -u
d=${1:?usage: destdir.sh DESTDIR}
# shellcheck source=tests/package/checks.sh
. "$(dirname "$0")/checks.sh"
rm -rf "$d"
# The service's configuration names the group ringbloom, which
# systemd-sysusers makes on a real install: made here for `ringbloomd -t`
# if missing, and removed again.
made_group=
if ! getent group ringbloom > /dev/null; then
    groupadd -r ringbloom && made_group=1
fi
trap 'rm -rf "$d" "$d.units"; [ -z "$made_group" ] || groupdel ringbloom' EXIT

if make install DESTDIR="$d" > install.log 2>&1; then ok "make install DESTDIR"; else
    bad "make install DESTDIR"; tail -n 30 install.log; fi
for f in usr/local/sbin/ringbloomd usr/local/bin/ringbloom usr/local/include/ringbloom.h \
         usr/local/include/ringbloom/segment.h usr/local/lib/pkgconfig/ringbloom.pc \
         usr/local/lib/libringbloom.so usr/local/lib/libringbloom.so.1 \
         usr/local/lib/systemd/system/ringbloomd.service \
         usr/local/lib/systemd/system/ringbloomd@.service \
         usr/local/lib/sysusers.d/ringbloom.conf usr/local/lib/tmpfiles.d/ringbloom.conf \
         etc/ringbloom/ringbloomd.conf usr/local/share/doc/ringbloom/examples/ringbloomd.conf \
         usr/lib/nginx/modules/ngx_http_ringbloom_module.so \
         usr/local/share/nginx/modules-available/mod-http-ringbloom.conf \
         usr/local/share/man/man8/ringbloomd.8 usr/local/share/man/man5/ringbloomd.conf.5 \
         usr/local/share/man/man1/ringbloom.1 usr/local/share/man/man3/libringbloom.3 \
         usr/local/share/man/man3/rb_segment_attach.3; do
    check "installed: /$f" test -e "$d/$f"
done
check "the load file names the installed module" grep -qx \
    'load_module /usr/lib/nginx/modules/ngx_http_ringbloom_module.so;' \
    "$d/usr/local/share/nginx/modules-available/mod-http-ringbloom.conf"
check "ringbloomd -V runs" quiet "$d/usr/local/sbin/ringbloomd" -V
check "ringbloomd -t accepts the service's configuration" quiet \
    "$d/usr/local/sbin/ringbloomd" -t -c "$d/etc/ringbloom/ringbloomd.conf"
check "the units run /usr/local/sbin/ringbloomd with /etc/ringbloom/ringbloomd.conf" \
    grep -q '^ExecStart=/usr/local/sbin/ringbloomd -f -c /etc/ringbloom/ringbloomd.conf ' \
    "$d/usr/local/lib/systemd/system/ringbloomd.service"
# systemd-analyze verify wants the command and the man pages the units
# name where they will be: point it at the staged ones.
mkdir -p "$d.units"
for u in ringbloomd.service ringbloomd@.service; do
    sed "s|/usr/local/sbin/ringbloomd|$d/usr/local/sbin/ringbloomd|" \
        "$d/usr/local/lib/systemd/system/$u" > "$d.units/$u"
done
for u in ringbloomd.service ringbloomd@ci.service; do
    if out=$(MANPATH="$d/usr/local/share/man" systemd-analyze verify "$d.units/$u" 2>&1) &&
       [ -z "$out" ]; then ok "systemd-analyze verify $u"; else
        bad "systemd-analyze verify $u: $out"; fi
done
echo "# edited" >> "$d/etc/ringbloom/ringbloomd.conf"
make install DESTDIR="$d" > install2.log 2>&1
check "a re-install keeps an edited configuration" grep -qx '# edited' "$d/etc/ringbloom/ringbloomd.conf"
rm "$d/etc/ringbloom/ringbloomd.conf"
make install DESTDIR="$d" > install3.log 2>&1
if make uninstall DESTDIR="$d" > uninstall.log 2>&1; then ok "make uninstall"; else
    bad "make uninstall"; tail -n 20 uninstall.log; fi
left=$(find "$d" -type f -o -type l)
check "make uninstall leaves no file${left:+: $left}" test -z "$left"
echo "Checks: $checks, Failures: $fails"
[ $fails -eq 0 ]
