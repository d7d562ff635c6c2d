# Under a limit, a setting with expandable segments can end with more reserved than the limit
# (PyTorch checks the limit against the request and maps whole pages): said beside it
"$MEMSNAP" explain --limit 7.5GiB testdata/snapshots/gpt_train.pickle.zst 2>/dev/null |
	grep -A1 "^    expandable_segments:True,roundup_power2_divisions:4$"
