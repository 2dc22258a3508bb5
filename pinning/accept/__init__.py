"""pin accept: acceptance gates (gates file, readers of existing results, judging)."""
