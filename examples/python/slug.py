"""URL slugs for article titles."""

import re
import unicodedata


def slugify(title: str, max_length: int = 60) -> str:
    """Lower-case ASCII words of the title joined by hyphens, at most
    max_length characters, never ending in a hyphen."""
    ascii_title = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
    words = re.findall(r"[a-z0-9]+", ascii_title)
    slug = "-".join(words)
    return slug[:max_length].rstrip("-")
