#ifndef STACK_H
#define STACK_H
typedef struct { int items[16]; int top; } stack;
void stack_init(stack *s);
void stack_push(stack *s, int v);
int stack_pop(stack *s);
#endif
