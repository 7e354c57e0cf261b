# Shared by scripts/build-images.sh and deploy/build-base-images.sh: where
# Debian packages come from. Source it; it defines functions only.

# mirror prints the Debian mirror: $DEBIAN_MIRROR, else the one apt uses
# here, else deb.debian.org.
mirror() {
	if [ -n "${DEBIAN_MIRROR:-}" ]; then
		echo "$DEBIAN_MIRROR"
		return
	fi
	local m=""
	if [ -f /etc/apt/sources.list.d/debian.sources ]; then
		m=$(awk '/^URIs:/ && $2 ~ /debian\/?$/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)
	fi
	if [ -z "$m" ] && [ -f /etc/apt/sources.list ]; then
		m=$(awk '$1=="deb" && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list)
	fi
	echo "${m:-http://deb.debian.org/debian}"
}
