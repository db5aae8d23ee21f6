#!/bin/sh
# man_lint.sh - the manual pages of man/ lint clean and cannot drift from
# the sources: mandoc -T lint (warning level and up) finds nothing in any
# page; every RB_EXPORT function of lib/ringbloom/*.h has a man3 page or a
# .so link page leading to a page that names it (.Nm); every setting of
# daemon/server/config_table.c's table has an entry (.It Cm NAME) in ringbloomd.conf.5;
# every command of the CLI's table (client/main.c) has one in ringbloom.1;
# every command of the daemon's tables (daemon/commands/cmd*.c) has one in
# ringbloomd.8 (a subcommand by its own row: CLIENT LIST), marked (W) exactly
# when it changes state (@write) and (A)
# exactly when it is @admin.
# The lists come from the sources, so a new function, setting or command
# without its entry fails here.  Link pages (one line, ".so man3/PAGE.3")
# are checked by hand, not linted: mandoc calls every .so fragile.
# Exit 0: all clean; 1: what is wrong is listed on stderr.
set -u
srcdir=${srcdir:-.}
man=$srcdir/man
fail=0
bad() { echo "man_lint: $*" >&2; fail=1; }

if ! command -v mandoc >/dev/null 2>&1; then
    echo "man_lint: mandoc is not installed (Debian package mandoc: apt-get install mandoc)" >&2
    exit 1
fi
for d in lib/ringbloom daemon client man/man1 man/man3 man/man5 man/man8; do
    test -d "$srcdir/$d" || { echo "man_lint: $srcdir/$d is missing" >&2; exit 1; }
done

# (a) Lint every page that is not a link page, from man/ so that .Xr and
# .so resolve as they would once installed.
pages=0
for p in "$man"/man[0-9]/*.[0-9]; do
    test -f "$p" || continue
    rel=${p#"$man"/}
    if head -n 1 "$p" | grep -q '^\.so '; then
        if test "$(wc -l < "$p")" -ne 1; then
            bad "$rel: a link page is the one line .so man3/PAGE.3"
        fi
        target=$(sed -n '1s/^\.so //p' "$p")
        test -f "$man/$target" || bad "$rel: links to $target, which does not exist"
        continue
    fi
    pages=$((pages + 1))
    out=$(cd "$man" && mandoc -T lint -W warning "$rel" 2>&1)
    if test -n "$out"; then
        printf '%s\n' "$out" >&2
        bad "$rel: mandoc -T lint reports the above"
    fi
done
# Every page is installed and distributed: named in Makefile.am.
for p in "$man"/man[0-9]/*.[0-9]; do
    rel=man/${p#"$man"/}
    grep -q "$rel\( \|\$\)" "$srcdir/Makefile.am" || bad "$rel is not in Makefile.am's dist_man_MANS"
done
test "$pages" -ge 10 || bad "only $pages pages found under $man"

# (b1) Every exported function: man3/NAME.3, itself the page or a link to
# a page whose NAME section lists it.
nfn=0
for h in "$srcdir"/lib/ringbloom/*.h; do
    for fn in $(sed -n 's/^RB_EXPORT[^(]*[ *]\(rb_[a-z0-9_]*\)(.*/\1/p' "$h"); do
        nfn=$((nfn + 1))
        page=$man/man3/$fn.3
        if ! test -f "$page"; then
            bad "$fn (${h#"$srcdir"/}) has no man3 page or link man/man3/$fn.3"
            continue
        fi
        target=$(sed -n '1s/^\.so //p' "$page")
        test -n "$target" && page=$man/$target
        test -f "$page" || continue      # reported above
        grep -Eq "^\.Nm $fn( ,)?\$" "$page" ||
            bad "$fn: ${page#"$man"/} does not name it (.Nm $fn)"
        grep -Eq "^\.(Fn|Fo) $fn( |\$)" "$page" ||
            bad "$fn: ${page#"$man"/} has no synopsis of it (.Fn / .Fo $fn)"
    done
done
# Every RB_EXPORT line names a function the sed above found: a
# declaration split differently must not slip past the check.
nexp=$(cat "$srcdir"/lib/ringbloom/*.h | grep -c '^RB_EXPORT')
test "$nfn" -eq "$nexp" ||
    bad "found $nfn functions on $nexp RB_EXPORT lines of lib/ringbloom/*.h"
test "$nfn" -ge 50 || bad "only $nfn exported functions found (has the header format changed?)"

# (b2) Every setting of config_table.c's table: rows like
#     { "name", T_KIND, F(field), ...
conf=$man/man5/ringbloomd.conf.5
nset=0
for s in $(sed -n 's/^[[:space:]]*{ *"\([a-z0-9-]*\)", *T_[A-Z0-9_]*,.*/\1/p' "$srcdir/daemon/server/config_table.c"); do
    nset=$((nset + 1))
    grep -Eq "^\.It Cm $s( |\$)" "$conf" || bad "setting $s (daemon/server/config_table.c) has no entry in ringbloomd.conf.5"
done
nrows=$(sed -n '/ rbd_settings\[\] = {/,/^};/p' "$srcdir/daemon/server/config_table.c" | grep -c '^[[:space:]]*{ *"')
test "$nset" -eq "$nrows" || bad "read $nset settings from $nrows table rows of daemon/server/config_table.c"
# ... and every other name of one (its aliases table: { "alias", "name" }).
for s in $(sed -n '/ rbd_aliases\[\] = {/,/^};/s/^[[:space:]]*{ *"\([a-z0-9-]*\)", *"[a-z0-9-]*" *}.*/\1/p' \
           "$srcdir/daemon/server/config_table.c"); do
    nset=$((nset + 1))
    grep -Eq "^\.It Cm $s( |\$)" "$conf" || bad "setting $s (daemon/server/config_table.c) has no entry in ringbloomd.conf.5"
done
test "$nset" -ge 20 || bad "only $nset settings found in daemon/server/config_table.c (has its table changed?)"

# (b3) Every command of the CLI's table: rows like
#     { "name", MIN, MAX, cmd_fn, HEADING,
cli=$man/man1/ringbloom.1
ncmd=0
for c in $(sed -n 's/^[[:space:]]*{ *"\([a-z][a-z0-9-]*\)", *[-0-9A-Z]*, *[-0-9A-Z]*, *cmd_[a-z_]*,.*/\1/p' "$srcdir/client/main.c"); do
    ncmd=$((ncmd + 1))
    # An entry: ".It Cm NAME ...", or ".It Xo" then ".Cm NAME ...".
    awk -v c="$c" '$1 == ".It" && $2 == "Cm" && $3 == c { found = 1 }
                   prev == ".It Xo" && $1 == ".Cm" && $2 == c { found = 1 }
                   { prev = $0 } END { exit !found }' "$cli" ||
        bad "command $c (client/main.c) has no entry in ringbloom.1"
done
nrows=$(grep -c 'cmd_[a-z_]*, *[A-Z]*,' "$srcdir/client/main.c")
test "$ncmd" -eq "$nrows" || bad "read $ncmd commands from $nrows table rows of client/main.c"
test "$ncmd" -ge 10 || bad "only $ncmd commands found in client/main.c (has its table changed?)"

# (b4) Every command of the daemon's tables (daemon/commands/cmd*.c), rows like
#     RBD_COMMAND("NAME", ARITY, FLAGS, cmd_fn, "group", "summary", "syntax"),
# (or RBD_COMMAND_CATS / _SUBS, with categories or subcommands before
# cmd_fn; subcommands' own rows, RBD_SUBCOMMAND, are their command's)
# has an entry in ringbloomd.8's COMMANDS: ".It Cm NAME ...", or ".It Xo"
# then ".Cm NAME ...", where NAME may be one of "A | B" alternatives that
# open the entry; an entry of a command flagged CMD_WRITE says (W), of one
# flagged CMD_ADMIN (A), any other entry of it neither.
daemon8=$man/man8/ringbloomd.8
rows=$(sed -n 's/.*RBD_COMMAND\(_CATS\|_SUBS\)\{0,1\}("\([A-Z][A-Z.]*\)", *-*[0-9]*, *\([A-Z_0-9 |]*\), *\([A-Za-z_]*, *\)\{0,1\}[a-z_]*cmd_[a-z0-9_]*, *"[a-z]*",.*/\2 \3/p' \
       "$srcdir"/daemon/commands/cmd*.c)
nrbd=$(printf '%s\n' "$rows" | grep -c .)
nrows=$(cat "$srcdir"/daemon/commands/cmd*.c | grep -c 'RBD_COMMAND\(_CATS\|_SUBS\)\{0,1\}("')
test "$nrbd" -eq "$nrows" || bad "read $nrbd commands from $nrows RBD_COMMAND rows of daemon/commands/cmd*.c"
test "$nrbd" -ge 40 || bad "only $nrbd commands found in daemon/commands/cmd*.c (has the table format changed?)"
# Each entry of the COMMANDS section as "NAME... <tab> W|-": the names
# that open it, and whether it says (W).
entries=$(awk '/^\.Sh / { in_cmds = ($2 == "COMMANDS") }
    !in_cmds { next }
    function open_entry(head, text,    t, n, i, names) {
        n = split(head, t, " ")
        names = t[1]
        for (i = 2; i + 1 <= n && t[i] == "|"; i += 2)
            names = names " " t[i + 1]
        cur = names; second = t[2]; w = (text ~ /\(W\)/) ? "W" : (text ~ /\(A\)/) ? "A" : "-"
    }
    function close_entry() { if (cur != "") print cur "\t" w "\t" second; cur = "" }
    $1 == ".It" && $2 == "Cm" { close_entry(); open_entry(substr($0, 8), $0); next }
    $0 == ".It Xo" { close_entry(); xo = 1; next }
    xo && $1 == ".Cm" { open_entry(substr($0, 5), $0); xo = 0; next }
    $1 == ".It" || $1 == ".El" { close_entry(); next }
    cur != "" && /\(W\)/ { w = "W" }
    cur != "" && /\(A\)/ { w = "A" }
    END { close_entry() }' "$daemon8")
# The subcommands, "PARENT SUB FLAGS" a line ((b5) checks their entries).
subrows=$(awk '
    /static const rbd_command_t [a-z_0-9]*\[\] *= *\{/ {
        t = $0; sub(/.*rbd_command_t */, "", t); sub(/\[.*/, "", t); table = t; next }
    table != "" && /RBD_SUBCOMMAND\("/ {
        line = $0; sub(/.*RBD_SUBCOMMAND\("/, "", line)
        name = line; sub(/".*/, "", name)
        flags = line; sub(/^[^,]*, *-*[0-9]*, */, "", flags); sub(/,.*/, "", flags)
        sub_of[table] = sub_of[table] name "=" flags ";"; next }
    /RBD_COMMAND_END/ { table = ""; next }
    /RBD_COMMAND_SUBS\("/ {
        line = $0; sub(/.*RBD_COMMAND_SUBS\("/, "", line)
        parent = line; sub(/".*/, "", parent)
        t = line; sub(/^[^,]*, *-*[0-9]*, *[A-Z_0-9 |]*, */, "", t); sub(/,.*/, "", t)
        uses[parent] = t }
    END {
        for (p in uses) {
            n = split(sub_of[uses[p]], rs, ";")
            for (i = 1; i <= n; i++) if (rs[i] != "") {
                split(rs[i], kv, "="); print p, kv[1], kv[2] }
        }
    }' "$srcdir"/daemon/commands/cmd*.c)
nsub=$(printf '%s\n' "$subrows" | grep -c .)
nsubrows=$(cat "$srcdir"/daemon/commands/cmd*.c | grep -c 'RBD_SUBCOMMAND("')
test "$nsub" -eq "$nsubrows" || bad "read $nsub subcommands from $nsubrows RBD_SUBCOMMAND rows"
problems=$(printf '%s\n' "$rows" | while read -r name flags; do
    test -n "$name" || continue
    want=-
    case $flags in *CMD_WRITE*) want=W ;; *CMD_ADMIN*) want=A ;; esac
    # A subcommand's entry (CLIENT LIST) is marked by its own row ((b5)).
    subs=$(printf '%s\n' "$subrows" | awk -v c="$name" '$1 == c { printf " %s ", $2 }')
    marks=$(printf '%s\n' "$entries" | awk -F '\t' -v c="$name" -v subs="$subs" \
            'index(subs, " " $3 " ") == 0 { n = split($1, t, " "); for (i = 1; i <= n; i++) if (t[i] == c) print $2 }')
    any=$(printf '%s\n' "$entries" | awk -F '\t' -v c="$name" \
          '{ n = split($1, t, " "); for (i = 1; i <= n; i++) if (t[i] == c) print $2 }')
    if test -z "$any"; then
        echo "command $name (daemon/commands/cmd*.c) has no entry in ringbloomd.8"
    elif test -z "$marks"; then
        :   # only subcommand entries, checked by (b5)
    elif printf '%s\n' "$marks" | grep -qv "^$want\$"; then
        test "$want" = W && echo "command $name changes state: its ringbloomd.8 entry lacks (W)"
        test "$want" = A && echo "command $name is @admin: its ringbloomd.8 entry lacks (A)"
        test "$want" = - && echo "command $name changes nothing: its ringbloomd.8 entry says (W) or (A)"
    fi
done)
if test -n "$problems"; then
    printf '%s\n' "$problems" | sed 's/^/man_lint: /' >&2
    fail=1
fi

# (b5) So is every subcommand (RBD_SUBCOMMAND rows of a table that an
# RBD_COMMAND_SUBS row names): its entry ".It Cm PARENT SUB ..." (or after
# ".It Xo", ".Cm PARENT SUB ...") is marked by the subcommand's own flags,
# not its parent's: CLIENT LIST is (A) though CLIENT INFO is not.
subentries=$(awk '/^\.Sh / { in_cmds = ($2 == "COMMANDS") }
    !in_cmds { next }
    function open_entry(a, b, text) {
        cur = a " " b; w = (text ~ /\(W\)/) ? "W" : (text ~ /\(A\)/) ? "A" : "-" }
    function close_entry() { if (cur != "") print cur "\t" w; cur = "" }
    $1 == ".It" && $2 == "Cm" { close_entry(); open_entry($3, $4, $0); next }
    $0 == ".It Xo" { close_entry(); xo = 1; next }
    xo && $1 == ".Cm" { open_entry($2, $3, $0); xo = 0; next }
    $1 == ".It" || $1 == ".El" { close_entry(); next }
    cur != "" && /\(W\)/ { w = "W" }
    cur != "" && /\(A\)/ { w = "A" }
    END { close_entry() }' "$daemon8")
problems=$(printf '%s\n' "$subrows" | while read -r parent name flags; do
    test -n "$name" || continue
    want=-
    case $flags in *CMD_WRITE*) want=W ;; *CMD_ADMIN*) want=A ;; esac
    marks=$(printf '%s\n' "$subentries" | awk -F '\t' -v c="$parent $name" '$1 == c { print $2 }')
    if test -z "$marks"; then
        echo "subcommand $parent $name has no entry in ringbloomd.8"
    elif printf '%s\n' "$marks" | grep -qv "^$want\$"; then
        echo "subcommand $parent $name: its ringbloomd.8 entry should be marked '$want' (W, A or none)"
    fi
done)
if test -n "$problems"; then
    printf '%s\n' "$problems" | sed 's/^/man_lint: /' >&2
    fail=1
fi

if test "$fail" -eq 0; then
    echo "man_lint: $pages pages lint clean; $nfn functions, $nset settings, $ncmd commands," \
         "$nrbd daemon commands documented"
fi
exit $fail
