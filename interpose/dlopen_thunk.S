/*
 * vgpu's exported dlopen.  glibc resolves a relative name with the caller's
 * RUNPATH and $ORIGIN, and learns the caller from its return address; a C
 * wrapper would make vgpu the caller.  So the thunk asks C whether to
 * redirect the name, then tail-jumps to the real dlopen with the original
 * return address still on the stack.
 */
	.section .note.GNU-stack,"",@progbits
	.text
	.globl dlopen
	.type dlopen,@function
	.p2align 4
dlopen:
	endbr64
	pushq %rdi
	pushq %rsi
	subq $8, %rsp
	call vgpu_dlopen_redirect	/* (file) -> file to open; sets vgpu_dlopen_next */
	addq $8, %rsp
	popq %rsi
	popq %rdi
	movq %rax, %rdi
	jmp *vgpu_dlopen_next(%rip)
	.size dlopen,.-dlopen
