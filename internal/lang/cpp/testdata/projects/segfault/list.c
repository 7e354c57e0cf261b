#include "list.h"
int list_length(const struct node *head) {
    int n = 0;
    do { n++; head = head->next; } while (head->next);
    return n;
}
