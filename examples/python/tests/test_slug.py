from slug import slugify


def test_lower_cases_and_joins_words():
    assert slugify("Hello, World!") == "hello-world"


def test_drops_accents():
    assert slugify("Café Crème") == "cafe-creme"


def test_cuts_at_max_length_without_trailing_hyphen():
    assert slugify("one two three", max_length=8) == "one-two"
