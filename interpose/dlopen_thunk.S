/*
 * vgpu's exported dlopen.  glibc resolves a relative name with the caller's
 * RUNPATH and $ORIGIN, and learns the caller from its return address; a C
 * wrapper would make vgpu the caller.  So the thunk asks C what to do
 * (interpose/dlopen.c), and in the common case tail-jumps to the real dlopen
 * with the name to open and the original return address still on the stack.
 * A load that vgpu must follow up (RTLD_DEEPBIND) C makes itself, on the
 * caller's behalf, and the thunk returns its handle.
 */
	.section .note.GNU-stack,"",@progbits
	.text
	.globl dlopen
	.type dlopen,@function
	/* The same code under a hidden name: what vgpu itself points others at
	 * (rebind.c), its own whatever the load order binds "dlopen" to. */
	.globl vgpu_dlopen_thunk
	.hidden vgpu_dlopen_thunk
	.type vgpu_dlopen_thunk,@function
	.p2align 4
dlopen:
vgpu_dlopen_thunk:
	endbr64
	pushq %rdi
	pushq %rsi
	subq $8, %rsp
	movq 24(%rsp), %rdx		/* the caller's return address */
	call vgpu_dlopen_prepare	/* (file, mode, caller) -> rax: file or handle, rdx: 1 if done */
	addq $8, %rsp
	popq %rsi
	popq %rdi
	testq %rdx, %rdx
	jnz 1f
	movq %rax, %rdi
	jmp *vgpu_dlopen_next(%rip)
1:	ret
	.size dlopen,.-dlopen
	.size vgpu_dlopen_thunk,.-vgpu_dlopen_thunk
