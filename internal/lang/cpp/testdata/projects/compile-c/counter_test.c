int count_words(const char *s);
int main(void) { return count_words("a b c") == 3 ? 0 : 1; }
