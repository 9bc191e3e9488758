#!/usr/bin/env bash
# retry.sh CMD [ARG...]: runs CMD; when it fails with what a transient network failure prints (a DNS or TCP
# time-out, a reset, a 5xx from a registry), runs it again after 10, 30 and 90 s (RETRY_PAUSES; RETRY_TRIES
# attempts in all, default 4). Any other failure ends at once with CMD's exit status, so a compile error is not retried.
# Used by the set-up steps that reach a registry (apt, pip, the Go module proxy): the Makefile and .ci/run.
set -uo pipefail
tries="${RETRY_TRIES:-4}"
read -ra pauses <<< "${RETRY_PAUSES:-10 30 90}"
transient='i/o timeout|dial tcp|connection (reset|refused|timed out)|TLS handshake timeout|[Tt]emporary failure'
transient+='|unexpected EOF|Could not resolve|Failed to fetch|Read ?[Tt]imed ?out|ConnectTimeout|Max retries exceeded'
transient+='|Hash Sum mismatch|Bad Gateway|Service Unavailable|Gateway Time-?out|[^0-9]50[234][^0-9]'
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
for attempt in $(seq 1 "$tries"); do
  { "$@" 2>&1 1>&3 3>&- | tee "$log" >&2; } 3>&1  # stdout as it is, stderr shown and kept
  rc="${PIPESTATUS[0]}"
  [ "$rc" = 0 ] && exit 0
  if [ "$attempt" = "$tries" ] || ! grep -Eq "$transient" "$log"; then exit "$rc"; fi
  pause="${pauses[$(( attempt <= ${#pauses[@]} ? attempt - 1 : ${#pauses[@]} - 1 ))]}"
  echo "retry.sh: '$1' failed (exit $rc) on what looks like a transient network failure;" \
    "attempt $((attempt + 1)) of $tries in ${pause}s" >&2
  sleep "$pause"
done
