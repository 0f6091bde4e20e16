#!/bin/bash
# Writes the kubelet's system reservation to /etc/node-sizing.env, which
# kubelet.service passes as --system-reserved. With auto-sizing enabled
# (the first argument true: a KubeletConfig's autoSizingReserved), memory
# and CPU are computed from the node's capacity with MCO's tiers; else the
# given values are taken as they are.
#
# Usage: dynamic-system-reserved-calc.sh ENABLED MEMORY CPU EPHEMERAL_STORAGE
# NODE_SIZING_ENV, TOTAL_MEMORY_KIB and TOTAL_CPUS override the output file
# and the capacity read from /proc/meminfo and nproc (for tests).
set -euo pipefail

enabled=${1:-false}
memory=${2:-1Gi}
cpu=${3:-500m}
es=${4:-1Gi}
out=${NODE_SIZING_ENV:-/etc/node-sizing.env}

if [ "$enabled" = true ]; then
	total_mib=$(( ${TOTAL_MEMORY_KIB:-$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)} / 1024 ))
	cpus=${TOTAL_CPUS:-$(nproc)}

	# Memory: 25% of the first 4 GiB, 20% of the next 4 GiB, 10% of the
	# next 8 GiB, 6% of the next 112 GiB and 2% of the rest.
	reserved=0
	left=$total_mib
	for tier in 4096:25 4096:20 8192:10 114688:6 0:2; do
		size=${tier%%:*} percent=${tier##*:}
		part=$left
		if [ "$size" -gt 0 ] && [ "$part" -gt "$size" ]; then
			part=$size
		fi
		reserved=$(( reserved + part * percent / 100 ))
		left=$(( left - part ))
	done
	memory="${reserved}Mi"

	# CPU, in tenths of a millicore: 6% of the first core, 1% of the
	# second, 0.5% of the third and fourth, 0.25% of each other.
	tenths=0
	for ((core = 1; core <= cpus; core++)); do
		case $core in
		1) tenths=$(( tenths + 600 )) ;;
		2) tenths=$(( tenths + 100 )) ;;
		3 | 4) tenths=$(( tenths + 50 )) ;;
		*) tenths=$(( tenths + 25 )) ;;
		esac
	done
	cpu="$(( (tenths + 9) / 10 ))m"
fi

tmp=$(mktemp "${out}.XXXXXX")
printf 'SYSTEM_RESERVED_MEMORY=%s\nSYSTEM_RESERVED_CPU=%s\nSYSTEM_RESERVED_ES=%s\n' "$memory" "$cpu" "$es" > "$tmp"
mv "$tmp" "$out"
