# bash completion for knobctl.  The words come from knobctl itself
# ("knobctl help --complete [COMMAND]", generated from the option tables
# the parser uses), profile names from "knobctl profile list" and inventory
# groups from "knobctl nodeset -l", so they cannot drift from the binary.

_knobctl()
{
	local cur prev cmd i w
	COMPREPLY=()
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD-1]}
	# the inventory given on the line, for groups
	local inv=()
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		-c|--cluster) inv=(--cluster "${COMP_WORDS[i+1]}") ;;
		esac
	done
	# the command: the first word that is a command name
	local cmds
	cmds=$(knobctl help --complete 2>/dev/null | grep -v '^-')
	for ((i = 1; i < COMP_CWORD; i++)); do
		for w in $cmds; do
			[[ ${COMP_WORDS[i]} == "$w" ]] && { cmd=$w; break 2; }
		done
	done
	case $prev in
	-w|--nodes|-x|--exclude)
		COMPREPLY=($(compgen -W "$(knobctl "${inv[@]}" nodeset -l 2>/dev/null)" -- "$cur"))
		return ;;
	-c|--cluster|--ca|--cert|--key|--ssh-key|--known-hosts|--deb|--knobd)
		COMPREPLY=($(compgen -f -- "$cur"))
		return ;;
	--dir)
		COMPREPLY=($(compgen -d -- "$cur"))
		return ;;
	esac
	# an option that takes a value: complete nothing for it
	if [[ -n $cmd ]] && knobctl help --complete "$cmd" 2>/dev/null | grep -qx -- "$prev ARG"; then
		return
	fi
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$(knobctl help --complete $cmd 2>/dev/null | awk '$1 ~ /^-/ {print $1}')" -- "$cur"))
		return
	fi
	case $cmd in
	"") COMPREPLY=($(compgen -W "$cmds" -- "$cur")) ;;
	apply|verify) COMPREPLY=($(compgen -W "$(knobctl profile list 2>/dev/null | awk '{print $1}')" -- "$cur")) ;;
	profile) COMPREPLY=($(compgen -W "show check list $(knobctl profile list 2>/dev/null | awk '{print $1}')" -- "$cur")) ;;
	ca) COMPREPLY=($(compgen -W "init issue list renew revoke" -- "$cur")) ;;
	results) COMPREPLY=($(compgen -W "list show compare" -- "$cur")) ;;
	help) COMPREPLY=($(compgen -W "$cmds" -- "$cur")) ;;
	esac
}
complete -F _knobctl knobctl
