#include <assert.h>
#include "stack.h"
int main(void) {
    stack s;
    stack_init(&s);
    stack_push(&s, 7);
    stack_push(&s, 9);
    assert(stack_pop(&s) == 9);
    assert(stack_pop(&s) == 7);
    return 0;
}
