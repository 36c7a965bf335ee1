// Package exepages drops from a process's page tables the pages of its own
// executable that it only reads: code and read-only data. They are clean
// pages of the page cache, shared with every other process of the same
// executable; dropping them frees nothing for the others, and a page that
// is used again costs a minor fault. What start-up alone ran (package
// initialisers, flag parsing, recovery) then stops counting in the
// process's resident set, and the kernel can reclaim it first. Writable
// mappings (a private copy may hold the process's data) are never touched.
package exepages
