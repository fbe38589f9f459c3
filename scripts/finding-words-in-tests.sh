#!/bin/sh
# Issue 40: tests match kinds and typed fields, not a finding's words.
# Lists the asserts under tests/cli that read a row's or finding's detail,
# hint or message for a phrase (a literal with a space in it); the count
# is the last line. render/'s own unit tests (src/render) are where words
# are tested and are not counted.
cd "$(dirname "$0")/.." || exit 1
grep -rnE '(detail|hint|message|\["(detail|hint)"\])[^;]*\.(contains|starts_with|ends_with)\(&?(format!\()?"[^"]* [^"]*"' tests/cli
grep -rnE '(detail|hint|message|\["(detail|hint)"\])[^;]*\.(contains|starts_with|ends_with)\(&?(format!\()?"[^"]* [^"]*"' tests/cli | wc -l
