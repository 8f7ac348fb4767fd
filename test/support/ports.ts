/**
 * A loopback port nothing listens on, for tests of a server that is down (connections refused):
 * port 1 (tcpmux), which nothing here serves. Not a port from listen(0) closed again: the kernel
 * hands that port to the next listen(0) or outgoing connection of any test file running meanwhile
 * (CI runs files in parallel), and the "down" server then answered, possibly as another file's SMTP
 * or webhook stand-in that counted what it got.
 */
export const refusedPort = 1;
