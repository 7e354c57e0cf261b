#ifndef LIST_H
#define LIST_H
struct node { int value; struct node *next; };
int list_length(const struct node *head);
#endif
