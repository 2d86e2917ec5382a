/*
 * vgpu's exported dlmopen: as dlopen_thunk.S, for (lmid, file, mode).  The
 * caller's return address stays on the stack for glibc, which resolves a
 * relative name with the caller's RUNPATH.
 */
	.section .note.GNU-stack,"",@progbits
	.text
	.globl dlmopen
	.type dlmopen,@function
	/* The same code under a hidden name: what vgpu itself points others at
	 * (rebind.c), its own whatever the load order binds "dlmopen" to. */
	.globl vgpu_dlmopen_thunk
	.hidden vgpu_dlmopen_thunk
	.type vgpu_dlmopen_thunk,@function
	.p2align 4
dlmopen:
vgpu_dlmopen_thunk:
	endbr64
	pushq %rdi
	pushq %rsi
	pushq %rdx
	movq 24(%rsp), %rcx		/* the caller's return address */
	call vgpu_dlmopen_prepare	/* (lmid, file, mode, caller) -> rax: file or handle, rdx: 1 if done */
	movq %rdx, %r11
	popq %rdx
	popq %rsi
	popq %rdi
	testq %r11, %r11
	jnz 1f
	movq %rax, %rsi
	jmp *vgpu_dlmopen_next(%rip)
1:	ret
	.size dlmopen,.-dlmopen
	.size vgpu_dlmopen_thunk,.-vgpu_dlmopen_thunk
