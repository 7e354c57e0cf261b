#include <stdio.h>
#include "list.h"
int main(void) {
    struct node b = {2, NULL}, a = {1, &b};
    if (list_length(NULL) != 0) { printf("want 0\n"); return 1; }
    if (list_length(&a) != 2) { printf("want 2\n"); return 1; }
    return 0;
}
