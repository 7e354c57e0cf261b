#!/bin/sh
# Registers the namespace workers poll, when it is missing, and the custom
# search attributes autocoder keeps current on each task.
#
# Env: TEMPORAL_ADDRESS (read by the temporal CLI itself), TEMPORAL_NAMESPACE,
# TEMPORAL_RETENTION, AUTOCODER_SEARCH_ATTRIBUTES ("Name=Type ...").
set -eu

ns=${TEMPORAL_NAMESPACE:-default}

# The frontend accepts connections a little before it serves.
tries=0
until temporal operator cluster health >/dev/null 2>&1; do
	tries=$((tries + 1))
	if [ "$tries" -ge 60 ]; then
		echo "temporal-namespace: Temporal at $TEMPORAL_ADDRESS is not serving after 60 s; see docker-compose logs temporal" >&2
		exit 1
	fi
	sleep 1
done

if temporal operator namespace describe --namespace "$ns" >/dev/null 2>&1; then
	echo "temporal-namespace: namespace $ns exists"
else
	echo "temporal-namespace: creating namespace $ns (retention ${TEMPORAL_RETENTION:-720h})"
	temporal operator namespace create --namespace "$ns" --retention "${TEMPORAL_RETENTION:-720h}"
fi

# A new namespace is served once every frontend's namespace cache has it.
tries=0
until temporal operator search-attribute list --namespace "$ns" >/dev/null 2>&1; do
	tries=$((tries + 1))
	if [ "$tries" -ge 30 ]; then
		echo "temporal-namespace: namespace $ns is not served after 30 s" >&2
		exit 1
	fi
	sleep 1
done

# Adding an attribute that exists with the same type changes nothing; one
# that exists with another type is an error, the conflict to report.
set --
for pair in ${AUTOCODER_SEARCH_ATTRIBUTES:-}; do
	set -- "$@" --name "${pair%%=*}" --type "${pair#*=}"
done
if [ $# -gt 0 ]; then
	temporal operator search-attribute create --namespace "$ns" "$@"
fi
echo "temporal-namespace: namespace $ns ready with search attributes: ${AUTOCODER_SEARCH_ATTRIBUTES:-none}"
