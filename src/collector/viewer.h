/*
 * The viewer connection (private to the sender): the listening socket, the handshake a new viewer
 * gets (HELLO and the state it needs), sending, requests (detach), sockets the program took over,
 * a move to another session, and the final file for a viewer that is late.
 */
#ifndef CUSCOPE_COLLECTOR_VIEWER_H
#define CUSCOPE_COLLECTOR_VIEWER_H

#include "sender_impl.h"

int viewer_build_intro(struct sender *s);
void viewer_disconnect(struct sender *s);
void viewer_accept(struct sender *s);
void viewer_send(struct sender *s);
void viewer_check_hangup(struct sender *s, short revents);
int viewer_listen(struct sender *s);
void viewer_check_fds(struct sender *s);
int viewer_write_final(struct sender *s);
int viewer_move_session(const char *dir);
int viewer_move_pending(void);
void viewer_close(struct sender *s);
void viewer_forget_after_fork(struct sender *s);

#endif
