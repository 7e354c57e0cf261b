#include "stack.h"
void stack_init(stack *s) { s->top = 0; }
void stack_push(stack *s, int v) { s->items[s->top++] = v; }
int stack_pop(stack *s) { return s->items[s->top]; }
