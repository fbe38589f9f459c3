# shellcheck shell=bash
# Sourced by the scripts that make a private apt state (trixie-root.sh,
# kernel-matrix.sh): the package mirror is the one the host's own apt
# sources use, never a host name written into the repo, so a machine with
# a local mirror (or a proxy) gets its own.

# host_codename: the host's release codename (bookworm), from /etc/os-release.
host_codename() {
  (. /etc/os-release && echo "${VERSION_CODENAME:-}")
}

# host_apt_uri SUITE: the first http(s) URI of the host's apt sources that
# serves SUITE (deb822 .sources stanzas, "Enabled: no" skipped, then
# one-line .list entries); nothing when none does.
host_apt_uri() {
  local want=$1 f
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -e "$f" ] || continue
    # deb822: one stanza a paragraph; comments dropped, "Enabled: no" skipped.
    grep -v '^[[:space:]]*#' "$f" | awk -v want="$want" 'BEGIN { RS = ""; FS = "\n" }
      { t = u = s = ""; off = 0
        for (i = 1; i <= NF; i++) {
          if ($i ~ /^Types:/) t = " " substr($i, 7) " "
          else if ($i ~ /^URIs:/) u = substr($i, 6)
          else if ($i ~ /^Suites:/) s = " " substr($i, 8) " "
          else if ($i ~ /^Enabled:[[:space:]]*no/) off = 1 }
        gsub(/[[:space:]]+/, " ", t); gsub(/[[:space:]]+/, " ", s)
        if (!off && t ~ / deb / && s ~ (" " want " ")) {
          n = split(u, a, /[[:space:]]+/)
          for (j = 1; j <= n; j++) if (a[j] ~ /^https?:\/\//) { print a[j]; exit } } }'
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -e "$f" ] || continue
    # one-line: deb [options] URI SUITE COMPONENT...
    sed -e 's/#.*//' -e 's/\[[^]]*\]//' "$f" |
      awk -v want="$want" '$1 == "deb" && $3 == want && $2 ~ /^https?:\/\// { print $2; exit }'
  done
}
