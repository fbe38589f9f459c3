#!/usr/bin/env bash
# The kernel matrix (issues 22 and 25): Debian's kernels booted under QEMU
# with the static vdsoctl and a suite run in the guest, exact counts asserted.
#
#   scripts/kernel-matrix.sh [-j JOBS] [--kernels GLOB | --all] [--timeout SECONDS]
#
# With neither --kernels nor --all it boots the every-run set, bookworm's
# kernels (the kernels file's rows without a SUITE or with bookworm's: the
# 6.12 boot variants with their BOOT ARGS too): what CI runs, in a few
# minutes. --all adds the on-demand rows (trixie's and sid's riscv64,
# ppc64el and s390x kernels: 5-30 min each under TCG here; trixie-backports'
# 7.3 amd64; sid's 7.2 amd64 and arm64); --kernels GLOB picks from every row by name.
#
# For each kernel of scripts/kernel-matrix/kernels (GLOB picks some by name):
# resolves the newest image package of its metapackage in a private apt state
# (bookworm, bookworm-security, bookworm-backports; the host's apt config and
# lists are left alone), downloads it with `apt-get download` into
# target/kernel-matrix/cache (reused when there) and takes its vmlinuz; builds
# the static vdsoctl and the static workloads (fixtures/clock_loop.c and
# fixtures/wait_ready.c for the 64-bit and 32-bit ABIs) for each arch; packs
# a busybox initramfs (busybox-static's .deb of that arch) with
# scripts/kernel-matrix/init and guest-suite.sh, and the kernel's plan: each
# engine and case scripts/kernel-matrix/expect names for it; boots it under
# TCG (x86_64: -cpu max, vsyscall=xonly, the TSC as clocksource; aarch64:
# virt, -cpu max,pauth-impdef=on), JOBS at once (default: the CPUs, at most
# 4), each killed after SECONDS (default 300 s for x86_64 and aarch64, 900 s
# for riscv64, ppc64el and s390x); and compares what the guest
# reported with the expectations. The dumped vDSO images come back over the
# console and are compared with objdump -T here.
#
# Prints a table (kernel, arch, engine, result, boot and run time) and exits
# 1 when any case missed its expectation or a kernel did not boot to the
# end. A kernel that can't be resolved or downloaded is a SKIP line (not a
# pass, not a failure: the table says which); none at all is a failure.
#
# Needs root (apt-get download as root; tracing in the guest is as root
# anyway), qemu-system-x86 and qemu-system-arm, cpio, gcc with gcc-multilib,
# clang with the arm64 and armhf cross libraries (libc6-dev-arm64-cross,
# libc6-dev-armhf-cross, their libgcc-12-dev-*-cross,
# binutils-aarch64-linux-gnu, binutils-arm-linux-gnueabihf),
# binutils-multiarch (objdump -T of foreign images) and the rustup targets
# x86_64- and aarch64-unknown-linux-gnu. .ci/run installs them all.
# Nothing it started is left running when it exits or is interrupted.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
data=$here/scripts/kernel-matrix
jobs=$(nproc)
[ "$jobs" -le 4 ] || jobs=4
only='*'
picked=
boot_timeout=
while [ $# -gt 0 ]; do
  case $1 in
  -j) jobs=${2:?-j wants a number}; shift 2 ;;
  --kernels) only=${2:?--kernels wants a glob} picked=1; shift 2 ;;
  --all) picked=1; shift ;;
  --timeout) boot_timeout=${2:?--timeout wants seconds}; shift 2 ;;
  -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  *) echo "kernel-matrix: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "kernel-matrix: run it as root, as .ci/run does (its private apt state and downloads are root's)" >&2; exit 4; }

top=$here/target/kernel-matrix
cache=$top/cache
run=$top/run
mkdir -p "$cache" "$top/apt/lists/partial" "$top/apt/cache/archives/partial"
rm -rf "$run"
mkdir -p "$run"
t_start=$(date +%s)
stage() { echo "== kernel-matrix, +$(($(date +%s) - t_start)) s: $*"; }

# Nothing left running: every QEMU writes its pid file under $run.
cleanup() {
  local f
  for f in "$run"/*/qemu.pid; do
    [ -s "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null || true
  done
  local j
  for j in $(jobs -p); do kill -TERM "$j" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- the private apt state: the host's sources and lists are not touched.
# The mirrors are the host's own (its apt sources' URIs for its release's
# main and -security suites), asked for bookworm's: a machine with a local
# mirror gets its own, and no host name is written here.
# shellcheck source=scripts/lib/host-apt.sh
. "$here/scripts/lib/host-apt.sh"
codename=$(host_codename)
main_uri=$(host_apt_uri "$codename" | sed -n 1p) || true
security_uri=$(host_apt_uri "$codename-security" | sed -n 1p) || true
[ -n "$codename" ] && [ -n "$main_uri" ] && [ -n "$security_uri" ] || {
  echo "kernel-matrix: no http(s) URIs serving the host's suites ${codename:-?} and ${codename:-?}-security in /etc/apt/sources.list{,.d/*.sources,.d/*.list}" >&2
  exit 4
}
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
# One private apt state per Debian release a kernel comes from (the
# kernels file's SUITE column): in one state the newest release's
# metapackage would win, and bookworm's kernels would be trixie's.
# bookworm's arches are amd64 and arm64; trixie adds riscv64, ppc64el and
# s390x (riscv64 is a release arch from trixie on).
apt_state() {
  local suite=$1 dir=$top/apt-$1 arches
  [ "$suite" = bookworm ] && dir=$top/apt
  case $suite in
  bookworm) arches=amd64,arm64 ;;
  trixie-backports) arches=amd64 ;;
  *) arches=amd64,arm64,riscv64,ppc64el,s390x ;;
  esac
  mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial"
  {
    echo "deb [arch=$arches signed-by=$keyring] $main_uri $suite main"
    # sid and trixie-backports have no -security suite.
    [ "$suite" = sid ] || [ "$suite" = trixie-backports ] || echo "deb [arch=$arches signed-by=$keyring] $security_uri $suite-security main"
    [ "$suite" != bookworm ] || echo "deb [arch=$arches signed-by=$keyring] $main_uri bookworm-backports main"
  } >"$dir/sources.list"
  local -a opts=(-qq -o Dir::Etc::SourceList="$dir/sources.list" -o Dir::Etc::SourceParts=/nonexistent
    -o Dir::State::Lists="$dir/lists" -o Dir::Cache="$dir/cache" -o Acquire::Languages=none
    -o Dir::Cache::pkgcache="$dir/pkgcache.bin" -o Dir::Cache::srcpkgcache="$dir/srcpkgcache.bin"
    -o APT::Sandbox::User=root)
  local a
  for a in ${arches//,/ }; do opts+=(-o "APT::Architectures::=$a"); done
  printf '%s\0' "${opts[@]}" >"$dir/opts"
  # A mirror caught mid-sync fails an index now and then: try again, then go
  # on with what was indexed (a kernel not indexed is a SKIP below).
  for try in 1 2 3; do
    apt-get "${opts[@]}" update >"$dir/update.log" 2>&1 && break
    echo "kernel-matrix: apt-get update of $suite failed (try $try of 3; $dir/update.log)" >&2
    [ "$try" = 3 ] || sleep 15
  done
}
# use_suite SUITE: apt_opts for that release's state.
use_suite() {
  local dir=$top/apt-$1
  [ "$1" = bookworm ] && dir=$top/apt
  mapfile -d '' -t apt_opts <"$dir/opts"
}

# deb_of PACKAGE[:ARCH] [VERSION]: download the package's candidate (or
# VERSION) into $cache (once)
# and print the .deb's path; fails when it is not indexed or not downloadable.
deb_of() {
  local pkg=$1 want=${2:-} name ver arch
  name=${pkg%%:*}
  # The candidate, or the version asked for (VERSION, the second argument).
  local all=()
  [ -n "$want" ] || all=(--no-all-versions)
  read -r ver arch < <(apt-cache "${apt_opts[@]}" show "${all[@]}" "$pkg" 2>/dev/null |
    awk -v want="$want" '/^Package: / { v = ""; a = "" } /^Version: / { v = $2 } /^Architecture: / { a = $2 }
      /^$/ && v != "" && (want == "" || v == want) && !done { print v, a; done = 1 }
      END { if (!done && v != "" && (want == "" || v == want)) print v, a }')
  [ -n "$ver" ] && [ -n "$arch" ] || return 1
  local deb=$cache/${name}_${ver//:/%3a}_$arch.deb
  echo "$deb" >>"$run/cache-used"
  if [ ! -s "$deb" ]; then
    (cd "$cache" && { apt-get "${apt_opts[@]}" download "$name:$arch=$ver" ||
      { sleep 5 && apt-get "${apt_opts[@]}" download "$name:$arch=$ver"; }; }) >/dev/null 2>&1 || return 1
  fi
  [ -s "$deb" ] && echo "$deb"
}

# kernel_of METAPACKAGE DIR: the newest image its Depends names, its vmlinuz
# (decompressed when gzip'd, as arm64's is) as DIR/kernel and its version as
# DIR/version; fails when it can't be had.
kernel_of() {
  local meta=$1 dir=$2 image="" image_pkg arch deb="" cand
  arch=${meta#*:}
  # The metapackage's first image dependency: 7.x metapackages name
  # linux-base-* first, so the first linux-image-* is taken. Each indexed
  # version of the metapackage, newest first: a mirror that indexes a
  # security update it does not serve yet (seen: trixie-security's
  # 6.12.118 for s390x and ppc64el, 404) falls back to the release's.
  # The candidate first (apt's pins: bookworm's 6.1 over backports' 6.12
  # for linux-image-amd64), then every indexed version, newest first.
  images() {
    apt-cache "${apt_opts[@]}" show "$@" "$meta" 2>/dev/null | sed -n 's/^Depends: //p' |
      while read -r deps; do echo "$deps" | tr ',' '\n' | sed 's/^ *//; s/ (= /=/; s/)$//; s/ .*//' | grep -m1 '^linux-image-'; done
  }
  # Then the older images of that series and flavour the index still
  # names (trixie's 6.12.113 for s390x and ppc64el, served where 6.12.115
  # to 6.12.118 answer 404): linux-image-6.12.N+debX-FLAVOUR, newest first.
  older() {
    local first series flavour p v
    first=$(images --no-all-versions | head -n 1)
    first=${first%%=*}
    [ -n "$first" ] || return 0
    series=$(echo "$first" | sed -n 's/^\(linux-image-[0-9]*\.[0-9]*\.\).*/\1/p')
    flavour=${first##*+deb}
    flavour=-${flavour#*-}
    [ -n "$series" ] || return 0
    apt-cache "${apt_opts[@]}" pkgnames "$series" 2>/dev/null | grep -- "+deb.*$flavour\$" |
      while read -r p; do
        [ "$arch" = "$meta" ] && q=$p || q=$p:$arch
        apt-cache "${apt_opts[@]}" show "$q" 2>/dev/null | sed -n "s/^Version: /$p=/p"
      done | sort -t= -k2 -V -r -u
  }
  for cand in $({ images --no-all-versions; images | sort -t= -k2 -V -r -u; older; } | awk '!seen[$0]++'); do
    image=${cand%%=*}
    [ "$arch" = "$meta" ] && image_pkg=$image || image_pkg=$image:$arch
    deb=$(deb_of "$image_pkg" "${cand#*=}") && break
    deb=""
  done
  [ -n "$deb" ] || return 1
  local x=$cache/$(basename "$deb" .deb)
  if [ ! -s "$x/kernel" ]; then
    rm -rf "$x" && mkdir -p "$x/tree"
    # --occurrence: stop reading the (large) data archive once found.
    dpkg-deb --fsys-tarfile "$deb" 2>/dev/null |
      tar -x -C "$x/tree" --wildcards --occurrence=1 './boot/vmlinu[xz]-*' 2>/dev/null || true
    # ppc64el's kernel is an ELF vmlinux, the others' a vmlinuz.
    local vmlinuz
    vmlinuz=$(ls "$x"/tree/boot/vmlinu[xz]-* 2>/dev/null | head -n 1)
    # 7.x: linux-image-VER-FLAVOUR is a stub; the kernel is
    # ./usr/lib/modules/VER/vmlinuz in linux-binary-VER-FLAVOUR.
    if [ -z "$vmlinuz" ] && ! dpkg-deb -c "$deb" | grep -q '/vmlinuz'; then
      local binary=${image_pkg/linux-image-/linux-binary-}
      deb=$(deb_of "$binary") || return 1
      local ver
      ver=${image#linux-image-}
      mkdir -p "$x/tree/boot"
      dpkg-deb --fsys-tarfile "$deb" 2>/dev/null |
        tar -x -O --wildcards --occurrence=1 "./usr/lib/modules/*/vmlinuz" >"$x/tree/boot/vmlinuz-$ver" 2>/dev/null || true
      [ -s "$x/tree/boot/vmlinuz-$ver" ] && vmlinuz=$x/tree/boot/vmlinuz-$ver
    fi
    [ -n "$vmlinuz" ] || return 1
    if [ "$(head -c 2 "$vmlinuz" | od -An -tx1 | tr -d ' ')" = 1f8b ]; then
      zcat "$vmlinuz" >"$x/kernel"
    else
      cp "$vmlinuz" "$x/kernel"
    fi
    basename "$vmlinuz" | sed 's/^vmlinu[xz]-//' >"$x/release"
    dpkg-deb -f "$deb" Version >"$x/version"
    rm -rf "$x/tree"
  fi
  ln -sf "$x/kernel" "$dir/kernel"
  echo "$(cat "$x/release") ($(cat "$x/version"))" >"$dir/version"
}

# ---- the kernels picked, and what each needs
declare -a k_name k_arch k_meta k_suite k_append
while read -r name arch meta suite append; do
  case $name in '' | '#'*) continue ;; esac
  # shellcheck disable=SC2053
  [[ $name == $only ]] || continue
  # The on-demand rows (another suite's) only when asked for.
  [ -n "$picked" ] || [ -z "$suite" ] || [ "$suite" = bookworm ] || continue
  k_name+=("$name") k_arch+=("$arch") k_meta+=("$meta") k_suite+=("${suite:-bookworm}") k_append+=("${append:-}")
done <"$data/kernels"
[ ${#k_name[@]} -gt 0 ] || { echo "kernel-matrix: no kernel in $data/kernels matches '$only'" >&2; exit 2; }
arches=$(printf '%s\n' "${k_arch[@]}" | sort -u)

stage "package lists (private apt states in $top/apt*)"
# riscv64, ppc64le and s390x take busybox-static from trixie (initramfs):
# its state too, whichever suite their kernels are from.
bases=bookworm
grep -qxE 'riscv64|ppc64le|s390x' <<<"$arches" && bases+=" trixie"
for suite in $(printf '%s\n' $bases "${k_suite[@]}" | sort -u); do
  apt_state "$suite"
done

stage "kernels (cache $cache)"
declare -A skipped
n_skipped=0
for i in "${!k_name[@]}"; do
  d=$run/${k_name[$i]}
  mkdir -p "$d"
  use_suite "${k_suite[$i]}"
  if kernel_of "${k_meta[$i]}" "$d"; then
    echo "  ${k_name[$i]}: $(cat "$d/version")"
  else
    skipped[${k_name[$i]}]="${k_meta[$i]} could not be resolved or downloaded"
    n_skipped=$((n_skipped + 1))
    echo "SKIP: ${k_name[$i]}: ${skipped[${k_name[$i]}]}"
  fi
done

# ---- the static binaries, per arch
# vdsoctl: crt-static; aarch64 linked by clang --target (gcc-aarch64-linux-gnu
# conflicts with gcc-multilib, which the -m32 workloads need).
build_vdsoctl() {
  case $1 in
  x86_64)
    (cd "$here" && RUSTFLAGS='-C target-feature=+crt-static' cargo build -q --release --target x86_64-unknown-linux-gnu)
    echo "$here/target/x86_64-unknown-linux-gnu/release/vdsoctl"
    ;;
  aarch64)
    (cd "$here" && CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=clang \
      RUSTFLAGS='-C target-feature=+crt-static -C link-arg=--target=aarch64-linux-gnu' \
      cargo build -q --release --target aarch64-unknown-linux-gnu)
    echo "$here/target/aarch64-unknown-linux-gnu/release/vdsoctl"
    ;;
  riscv64 | ppc64le | s390x)
    local rt ct
    rt=$(rust_target "$1") ct=$(clang_target "$1")
    (cd "$here" && env "CARGO_TARGET_$(echo "$rt" | tr 'a-z-' 'A-Z_')_LINKER=clang" \
      RUSTFLAGS="-C target-feature=+crt-static -C link-arg=--target=$ct" \
      cargo build -q --release --target "$rt")
    echo "$here/target/$rt/release/vdsoctl"
    ;;
  esac
}

# The 64-bit-only arches' Rust and clang targets.
rust_target() {
  case $1 in riscv64) echo riscv64gc-unknown-linux-gnu ;; ppc64le) echo powerpc64le-unknown-linux-gnu ;; s390x) echo s390x-unknown-linux-gnu ;; esac
}
clang_target() {
  case $1 in riscv64) echo riscv64-linux-gnu ;; ppc64le) echo powerpc64le-linux-gnu ;; s390x) echo s390x-linux-gnu ;; esac
}

# build_workloads ARCH DIR: the fixtures, static, for the arch's 64-bit and
# 32-bit (i386, AArch32 armhf) ABIs.
build_workloads() {
  local cc64 cc32
  case $1 in
  x86_64) cc64=(gcc) cc32=(gcc -m32) ;;
  aarch64) cc64=(clang --target=aarch64-linux-gnu) cc32=(clang --target=arm-linux-gnueabihf) ;;
  # No 32-bit ABI on these (Debian has none).
  riscv64 | ppc64le | s390x) cc64=(clang "--target=$(clang_target "$1")") cc32=() ;;
  esac
  local f
  local more=""
  # The robust-futex unlock's fallback: x86_64's (Linux 7.2).
  [ "$1" != x86_64 ] || more=robust_unlock
  for f in clock_loop wait_ready getrandom_loop $more; do
    "${cc64[@]}" -O2 -Wall -pthread -static -o "$2/$f" "$here/fixtures/$f.c"
    [ ${#cc32[@]} = 0 ] || "${cc32[@]}" -O2 -Wall -pthread -static -o "$2/${f}32" "$here/fixtures/$f.c"
  done
}

# build_unit_tests ARCH ROOT: on aarch64, the library's unit tests built as
# vdsoctl is (static, release) into ROOT/bin/unit-tests, with the fixtures
# they read at the checkout's own path (env!("CARGO_MANIFEST_DIR")): the
# guest's "unit" case runs them (x86_64 runs them on the host).
build_unit_tests() {
  [ "$1" = aarch64 ] || return 0
  local exe
  exe=$(cd "$here" && CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=clang \
    RUSTFLAGS='-C target-feature=+crt-static -C link-arg=--target=aarch64-linux-gnu' \
    cargo test --release --lib --no-run --target aarch64-unknown-linux-gnu 2>&1 |
    sed -n 's/^ *Executable unittests src\/lib.rs (\(.*\))$/\1/p')
  [ -n "$exe" ] || { echo "kernel-matrix: the aarch64 unit tests did not build" >&2; return 1; }
  cp "$here/$exe" "$2/bin/unit-tests"
  mkdir -p "$2$here" && cp -r "$here/fixtures" "$2$here/"
}

# initramfs ARCH: the base archive every kernel of the arch boots (gzip'd
# newc); each kernel's plan is an archive of its own in front of it.
initramfs() {
  local arch=$1 root=$top/root-$1 debarch vdsoctl busybox_deb
  local suite=bookworm
  case $arch in
  x86_64) debarch=amd64 ;;
  aarch64) debarch=arm64 ;;
  riscv64) debarch=riscv64 suite=trixie ;;
  ppc64le) debarch=ppc64el suite=trixie ;;
  s390x) debarch=s390x suite=trixie ;;
  esac
  use_suite "$suite"
  rm -rf "$root" && mkdir -p "$root/bin" "$root/matrix"
  busybox_deb=$(deb_of "busybox-static:$debarch") || { echo "kernel-matrix: busybox-static:$debarch not downloadable" >&2; return 1; }
  # bookworm's busybox-static keeps it at ./bin/busybox, later releases
  # (merged /usr) at ./usr/bin/busybox.
  dpkg-deb --fsys-tarfile "$busybox_deb" | tar -x -O ./bin/busybox >"$root/bin/busybox" 2>/dev/null ||
    dpkg-deb --fsys-tarfile "$busybox_deb" | tar -x -O ./usr/bin/busybox >"$root/bin/busybox"
  chmod +x "$root/bin/busybox"
  vdsoctl=$(build_vdsoctl "$arch")
  file "$vdsoctl" | grep -q 'static' || { echo "kernel-matrix: $vdsoctl is not static" >&2; return 1; }
  cp "$vdsoctl" "$root/bin/vdsoctl"
  build_workloads "$arch" "$root/bin"
  build_unit_tests "$arch" "$root"
  cp "$data/init" "$root/init"
  cp "$data/guest-suite.sh" "$root/matrix/"
  (cd "$root" && find . | cpio -o -H newc --quiet -R 0:0 | gzip -1) >"$top/initramfs-$arch.cpio.gz"
}

stage "static vdsoctl, workloads and initramfs for: $(echo $arches)"
for arch in $arches; do
  initramfs "$arch"
done

# A run of every kernel drops from the cache what it no longer uses (the
# packages of older kernels, and what was taken from them).
if [ "$only" = '*' ]; then
  for f in "$cache"/*.deb; do
    [ -e "$f" ] || continue
    grep -qxF "$f" "$run/cache-used" 2>/dev/null || rm -rf "$f" "${f%.deb}"
  done
fi

# ---- the plan of each kernel: which engine runs which case, and expects what
declare -a x_kernel x_engine x_case x_outcome x_why
while read -r kernel engine case outcome why; do
  case $kernel in '' | '#'*) continue ;; esac
  x_kernel+=("$kernel") x_engine+=("$engine") x_case+=("$case") x_outcome+=("$outcome") x_why+=("$why")
done <"$data/expect"

# expectation KERNEL ENGINE CASE: "OUTCOME WHY" of the last line that matches.
expectation() {
  local i found=""
  for i in "${!x_kernel[@]}"; do
    # shellcheck disable=SC2053
    [[ $1 == ${x_kernel[$i]} && $2 == "${x_engine[$i]}" && $3 == ${x_case[$i]} ]] &&
      found="${x_outcome[$i]} ${x_why[$i]}"
  done
  echo "${found:-none no line of scripts/kernel-matrix/expect matches}"
}

# plan KERNEL ARCH: "ENGINE CASE OUTCOME WHY" lines; engines in the order
# the expect file first names them for this kernel, then the "-" cases.
plan() {
  local i engines="" e kind c x
  for i in "${!x_kernel[@]}"; do
    # shellcheck disable=SC2053
    [[ $1 == ${x_kernel[$i]} && ${x_engine[$i]} != - ]] || continue
    case " $engines " in *" ${x_engine[$i]} "*) ;; *) engines="$engines ${x_engine[$i]}" ;; esac
  done
  for e in $engines -; do
    while read -r kind c; do
      [ "$kind" = trace ] && [ "$e" = - ] && continue
      [ "$kind" = - ] && [ "$e" != - ] && continue
      x=$(expectation "$1" "$e" "$c")
      [ "${x%% *}" = skip ] || echo "$e $c $x"
    done < <(sh "$data/guest-suite.sh" cases "$2")
  done
}

# ---- boot
# boot KERNEL ARCH [BOOT ARGS]: one QEMU run; the console in
# $run/KERNEL/console.log. BOOT ARGS go after the arch's own (the last of
# a kind wins: clocksource=hpet over clocksource=tsc).
boot() {
  local d=$run/$1 arch=$2 extra=${3:-} qemu
  awk '{ print $1, $2 }' "$d/plan" >"$d/plan-root/matrix/plan"
  (cd "$d/plan-root" && find . | cpio -o -H newc --quiet -R 0:0) >"$d/plan.cpio"
  # The uncompressed archive first, as early microcode is: after a compressed
  # one the kernel does not find the next archive's start.
  cat "$d/plan.cpio" "$top/initramfs-$arch.cpio.gz" >"$d/initrd"
  case $arch in
  x86_64)
    # thread=single: multi-threaded TCG soft-locks the kernel's text patching
    # when tracepoints are switched. vsyscall=xonly (Debian's default is
    # none) for the vsyscall case; clocksource=tsc: under TCG it is hpet
    # otherwise, which has no vDSO mode. no_timer_check: on a busy host
    # TCG's timer can miss the IO-APIC check's ticks, and the kernel panics
    # ("IO-APIC + timer doesn't work!", seen once with 6.12 cloud-amd64).
    qemu=(qemu-system-x86_64 -accel tcg,thread=single -cpu max -smp 2 -m 1G
      -append "console=ttyS0 clocksource=tsc tsc=reliable vsyscall=xonly no_timer_check panic=-1 quiet $extra")
    ;;
  aarch64)
    qemu=(qemu-system-aarch64 -M virt -cpu max,pauth-impdef=on -accel tcg,thread=single -smp 2 -m 1G
      -append "console=ttyAMA0 panic=-1 quiet $extra")
    ;;
  riscv64)
    # -bios default: OpenSBI, which the kernel needs under it.
    qemu=(qemu-system-riscv64 -M virt -bios default -accel tcg,thread=single -smp 2 -m 1G
      -append "console=ttyS0 panic=-1 quiet $extra")
    ;;
  ppc64le)
    # x-vof=on: QEMU's own Open Firmware, no SLOF to boot first.
    qemu=(qemu-system-ppc64 -M pseries,x-vof=on -accel tcg,thread=single -smp 2 -m 1G
      -append "console=hvc0 panic=-1 quiet $extra")
    ;;
  s390x)
    qemu=(qemu-system-s390x -M s390-ccw-virtio -cpu max -accel tcg,thread=single -smp 2 -m 1G
      -append "console=ttysclp0 panic=-1 quiet $extra")
    ;;
  esac
  # Each boot's limit: --timeout, else the arch's. TCG runs riscv64,
  # ppc64el and s390x guests slower, and their seccomp cases wait for
  # vdsoctl on every call (7.2 riscv64's whole suite: 337 s here).
  local limit=$boot_timeout
  [ -n "$limit" ] || case $arch in x86_64 | aarch64) limit=300 ;; *) limit=900 ;; esac
  echo "$limit" >"$d/limit"
  local t0 rc=0 watcher
  t0=$(date +%s.%N)
  # Boot time as the host sees it (the guest's clock runs off true under
  # TCG): until the guest's /init says MATRIX-BOOTED. Gone with QEMU or
  # with this script.
  (
    while kill -0 $$ 2>/dev/null && [ ! -e "$d/qemu.rc" ]; do
      if grep -qa MATRIX-BOOTED "$d/console.raw" 2>/dev/null; then
        awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f s\n", b - a }' >"$d/booted"
        break
      fi
      sleep 0.1
    done
  ) &
  watcher=$!
  # -nic none: no network, and no iPXE option ROM to run at boot.
  timeout --kill-after=5 "$limit" "${qemu[@]}" -nographic -nic none -no-reboot -pidfile "$d/qemu.pid" \
    -kernel "$d/kernel" -initrd "$d/initrd" </dev/null >"$d/console.raw" 2>&1 || rc=$?
  echo "$rc" >"$d/qemu.rc"
  wait "$watcher" || true
  awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f\n", b - a }' >"$d/wall"
  # Without the carriage returns and the firmware's terminal escapes.
  # Without NULs too (a verifier log's tail carried one: grep took the log
  # for binary and found no result).
  tr -d '\r\000' <"$d/console.raw" | sed 's/\x1b\[[0-9;?]*[a-zA-Z]//g; s/\x1bc//g' >"$d/console.log"
  echo "  $1: QEMU exited $rc after $(cat "$d/wall") s"
}

stage "booting (${jobs} at once, ${boot_timeout:-300 (x86_64, aarch64) or 900} s each at most)"
running=0
for i in "${!k_name[@]}"; do
  k=${k_name[$i]}
  [ -z "${skipped[$k]:-}" ] || continue
  mkdir -p "$run/$k/plan-root/matrix"
  plan "$k" "${k_arch[$i]}" >"$run/$k/plan"
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  boot "$k" "${k_arch[$i]}" "${k_append[$i]}" &
  running=$((running + 1))
done
wait || true

# ---- the verdicts
# image_symbols KERNEL CASE: objdump -T of the image the guest sent, as
# "NAME VERSION" lines (objdump shows a hidden version in parentheses).
image_symbols() {
  local d=$run/$1
  awk -v c="$2" '$0 == "MATRIX-IMAGE begin " c { on = 1; next } $0 == "MATRIX-IMAGE end " c { on = 0 } on' \
    "$d/console.log" | base64 -d >"$d/$2.so" 2>/dev/null || return 1
  # After the section's tab: size, the version when there is one (a
  # section symbol, riscv64's .rodata, has none: JSON's null), the name.
  objdump -T "$d/$2.so" 2>/dev/null |
    awk -F '\t' '/^[0-9a-f]+ / { n = split($2, f, " "); v = n >= 3 ? f[n - 1] : "null"; gsub(/[()]/, "", v); print f[n], v }' | sort
}

# guest_symbols KERNEL CASE: the symbols vdsoctl dump listed in the guest.
guest_symbols() {
  awk -v c="$2 symbols" '$0 == "MATRIX-LOG begin " c { on = 1; next } $0 == "MATRIX-LOG end " c { on = 0 } on' \
    "$run/$1/console.log"
}

failures=0
table=$run/table.md
{
  echo "| kernel: release (package version) | arch | engine | result | boot | run |"
  echo "| --- | --- | --- | --- | --- | --- |"
} >"$table"
fails=$run/failures
: >"$fails"

# outcome KERNEL ENGINE CASE: "GOT DETAIL" as the guest reported it (a
# dump's image checked against objdump -T here), or "missing ...".
outcome() {
  local d=$run/$1 line got detail
  line=$(grep -o -m1 "MATRIX $2 $3 .*" "$d/console.log" || true)
  got=$(echo "$line" | awk '{ print $4 }')
  detail=$(echo "$line" | cut -d' ' -f6-)
  if [ -z "$got" ]; then
    echo "missing no result"
    return
  fi
  if { [ "$3" = dump ] || [ "$3" = dump32 ]; } && [ "$got" = ok ]; then
    if diff <(image_symbols "$1" "$3") <(guest_symbols "$1" "$3") >"$d/$3.objdump.diff" && [ -s "$d/$3.so" ]; then
      detail="$detail, the same symbols as objdump -T"
    else
      got=differs
      detail="objdump -T of the image differs from vdsoctl dump's symbols: $(tr '\n' ';' <"$d/$3.objdump.diff" | cut -c1-200)"
    fi
  fi
  echo "$got $detail"
}

# engine_row KERNEL ARCH ENGINE BOOT first|next: the engine's planned cases
# against the console: a table row, failures to $fails; fails when one missed.
engine_row() {
  local k=$1 e=$3 d=$run/$1 n=0 good=0 seen="" notes="" missing="" failed=0
  local pe pc want why got detail
  while read -r pe pc want why; do
    [ "$pe" = "$e" ] || continue
    n=$((n + 1))
    read -r got detail < <(outcome "$k" "$e" "$pc")
    echo "MATRIX $k $e $pc want=$want got=$got $detail" >>"$run/results"
    if [ "$got" = "$want" ] || [[ "|$want|" == *"|$got|"* ]] || { [ "$want" = gap ] && [ "$got" != error ] && [ "$got" != missing ]; }; then
      good=$((good + 1))
      if [ "$want" = gap ]; then notes="$notes; gap: $pc $got"; else seen="$seen $got"; fi
      [ -z "$why" ] || echo "$why|${e/#-/none} $pc" >>"$run/whys"
    elif [ "$got" = missing ]; then
      failed=1 missing="$missing $pc"
    else
      failed=1
      echo "FAIL: $k $e $pc: expected $want, got $got — $detail" >>"$fails"
      notes="$notes; **FAIL $pc: $got, expected $want**"
    fi
  done <"$d/plan"
  if [ -n "$missing" ]; then
    local why_not="QEMU exited $(cat "$d/qemu.rc")"
    [ "$(cat "$d/qemu.rc")" != 124 ] || why_not="killed after $(cat "$d/limit") s (--timeout)"
    grep -q 'Kernel panic' "$d/console.log" && why_not="$why_not; $(grep -o -m1 'Kernel panic.*' "$d/console.log")"
    echo "FAIL: $k $e:$missing: no result, the guest did not get there ($why_not)" >>"$fails"
    notes="$notes; **FAIL, no result ($why_not):$missing**"
  fi
  # "7/7 as expected: 5 exact, 1 usage; gap: raw32 inexact"
  local counts=""
  [ -z "$seen" ] || counts=": $(echo $seen | tr ' ' '\n' | sort | uniq -c | awk '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $1, $2 }')"
  # The kernel, its boot and run time on its first row only.
  if [ "$5" = first ]; then
    echo "| $k: $(cat "$d/version") | $2 | ${e/#-/none} | $good/$n as expected$counts$notes | $4 | $(cat "$d/wall") s |"
  else
    echo "| | | ${e/#-/none} | $good/$n as expected$counts$notes | | |"
  fi >>"$table"
  return $failed
}

# verdict KERNEL ARCH: a table row per engine planned for the kernel.
verdict() {
  local d=$run/$1 boot_s="-" e
  [ ! -s "$d/booted" ] || boot_s=$(cat "$d/booted")
  local row=first
  for e in $(awk '!seen[$1]++ { print $1 }' "$d/plan"); do
    engine_row "$1" "$2" "$e" "$boot_s" $row || failures=$((failures + 1))
    row=next
  done
}

for i in "${!k_name[@]}"; do
  k=${k_name[$i]}
  if [ -n "${skipped[$k]:-}" ]; then
    echo "| $k | ${k_arch[$i]} | - | SKIP: ${skipped[$k]} | - | - |" >>"$table"
    continue
  fi
  verdict "$k" "${k_arch[$i]}"
done

echo
stage "results (consoles in $run/*/console.log)"
cat "$table"
echo
echo "(engine none: check, check-cmd, bench, maps, dump. boot: from QEMU's start to the guest's /init; run: the whole QEMU run.)"
if [ -s "$run/whys" ]; then
  echo
  echo "Expected differences and known gaps (scripts/kernel-matrix/expect):"
  # One line per reason, with the engine and cases it was given for.
  sort -u "$run/whys" | awk -F'|' '{ c[$1] = c[$1] (c[$1] == "" ? "" : ", ") $2 } END { for (w in c) print "- " c[w] ": " w }' | sort
fi
if [ -s "$fails" ]; then
  echo
  cat "$fails"
fi
[ "$n_skipped" = 0 ] || echo "kernel-matrix: $n_skipped kernel(s) skipped (SKIP above): not tested"
[ "$failures" = 0 ] || { echo "kernel-matrix: $failures kernel/engine row(s) missed their expectations" >&2; exit 1; }
[ "$n_skipped" -lt ${#k_name[@]} ] || { echo "kernel-matrix: no kernel could be had: nothing was tested" >&2; exit 1; }
echo "kernel-matrix: every expectation met on the $((${#k_name[@]} - n_skipped)) kernel(s) booted"
