#!/usr/bin/env python3
"""blocks.py - the fenced blocks of README.md and nginx/README.md, by marker.

Every fenced block (``` or ~~~) of these files is preceded, on the line just
above its opening fence, by an HTML comment (not shown when rendered) that
says what tests/package/install.sh does with it:

    <!-- package-test: run NAME -->       shell commands it runs
    <!-- package-test: file NAME -->      a file it installs (configuration)
    <!-- package-test: compile NAME -->   program source it compiles
    <!-- package-test: skip: REASON -->   not run, and why

NAME is unique within its file.  An indented code block (four spaces after
a blank line, outside a list) is refused: it could not carry a marker.

    blocks.py [--srcdir DIR]       check README.md and nginx/README.md (make check)
    blocks.py check FILE...        check these files
    blocks.py list FILE            "KIND NAME" for every run / file / compile block
    blocks.py get FILE NAME        the text of block NAME (exit 1 if there is none)

Exit status 0: every block has a valid marker; 1: a problem (each named with
its file and line); 2: usage.
"""
import os
import re
import sys

MARK = re.compile(r'^<!-- package-test: (?:(run|file|compile) ([A-Za-z0-9_.-]+)'
                  r'|(skip): (\S.*\S)) -->$')
FENCE = re.compile(r'^ {0,3}(`{3,}|~{3,})(.*)$')
LIST_ITEM = re.compile(r'^(?:[-*+]|\d+[.)]) ')


def parse(path):
    """Returns (blocks, problems): blocks as dicts kind, name, reason, line
    (of the opening fence), text; problems as 'path:line: what'."""
    with open(path, encoding='utf-8') as f:
        lines = f.read().split('\n')
    blocks, problems = [], []
    names = {}
    i = 0
    in_list = False
    prev_blank = True
    while i < len(lines):
        line = lines[i]
        m = FENCE.match(line)
        if m:
            fence = m.group(1)
            start = i
            body = []
            i += 1
            while i < len(lines) and not (lines[i].strip().startswith(fence[0] * len(fence))
                                          and lines[i].strip().strip(fence[0]) == ''):
                body.append(lines[i])
                i += 1
            if i >= len(lines):
                problems.append('%s:%d: fenced block never closed' % (path, start + 1))
            mark = MARK.match(lines[start - 1]) if start > 0 else None
            if mark is None:
                why = ('no "<!-- package-test: run|file|compile NAME -->" or '
                       '"<!-- package-test: skip: REASON -->" on the line above')
                if start > 0 and lines[start - 1].startswith('<!-- package-test'):
                    why = 'malformed marker: %s' % lines[start - 1]
                problems.append('%s:%d: fenced block: %s' % (path, start + 1, why))
            else:
                kind = mark.group(1) or 'skip'
                name = mark.group(2)
                if name is not None:
                    if name in names:
                        problems.append('%s:%d: block name %s already used at line %d'
                                        % (path, start + 1, name, names[name]))
                    names[name] = start + 1
                blocks.append({'kind': kind, 'name': name, 'reason': mark.group(4),
                               'line': start + 1, 'text': '\n'.join(body) + '\n'})
            i += 1
            prev_blank = False
            continue
        if line.startswith('<!-- package-test') and not (
                i + 1 < len(lines) and FENCE.match(lines[i + 1])):
            problems.append('%s:%d: marker not followed by a fenced block' % (path, i + 1))
        if line.strip() == '':
            prev_blank = True
        else:
            if not line.startswith((' ', '\t')):
                in_list = bool(LIST_ITEM.match(line)) or (in_list and not prev_blank)
            elif prev_blank and not in_list and (line.startswith('    ') or
                                                 line.startswith('\t')):
                problems.append('%s:%d: indented code block: make it a fenced block '
                                'with a package-test marker' % (path, i + 1))
            prev_blank = False
        i += 1
    return blocks, problems


def check(paths):
    bad = 0
    for p in paths:
        blocks, problems = parse(p)
        for pr in problems:
            print(pr)
        bad += len(problems)
        counts = {}
        for b in blocks:
            counts[b['kind']] = counts.get(b['kind'], 0) + 1
        print('%s: %d blocks (%s)' % (p, len(blocks), ', '.join(
            '%d %s' % (counts[k], k) for k in sorted(counts))))
    return 1 if bad else 0


def main(argv):
    if len(argv) >= 2 and argv[0] == 'check':
        return check(argv[1:])
    if len(argv) == 2 and argv[0] == 'list':
        blocks, problems = parse(argv[1])
        for b in blocks:
            if b['kind'] != 'skip':
                print(b['kind'], b['name'])
        return 1 if problems else 0
    if len(argv) == 3 and argv[0] == 'get':
        blocks, _ = parse(argv[1])
        for b in blocks:
            if b['name'] == argv[2]:
                sys.stdout.write(b['text'])
                return 0
        print('blocks.py: no block %s in %s' % (argv[2], argv[1]), file=sys.stderr)
        return 1
    if len(argv) == 2 and argv[0] == '--srcdir' or not argv:
        srcdir = argv[1] if argv else os.environ.get(
            'srcdir', os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
        return check([os.path.join(srcdir, 'README.md'),
                      os.path.join(srcdir, 'nginx', 'README.md')])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
