# powershell completion for deployplane                       -*- shell-script -*-
#
# deployplane answers each TAB itself: `deployplane __complete WORDS... CURRENT` prints
# the values that fit, one a line (a tab, then its description), then `:DIRECTIVE`,
# a sum of: 1 error (offer nothing), 2 no space after the value, 4 no file names
# either, 16 directories only. The protocol and this script are cobra's (kubectl, gh),
# Apache-2.0, The Cobra Authors.

filter __deployplane_escapeStringWithSpecialChars {
    $_ -replace '\s|#|@|\$|;|,|''|\{|\}|\(|\)|"|`|\||<|>|&','`$&'
}

[scriptblock]${__deployplaneCompleterBlock} = {
    param(
            $WordToComplete,
            $CommandAst,
            $CursorPosition
        )

    # the cursor may stand before the end of the line: complete there
    $Command = $CommandAst.CommandElements
    $Command = "$Command"
    if ($Command.Length -gt $CursorPosition) {
        $Command=$Command.Substring(0,$CursorPosition)
    }

    $ShellCompDirectiveError=1
    $ShellCompDirectiveNoSpace=2
    $ShellCompDirectiveNoFileComp=4
    $ShellCompDirectiveFilterDirs=16

    $Program,$Arguments = $Command.Split(" ",2)
    $RequestComp="$Program __complete $Arguments"

    # $WordToComplete is wrong when the cursor moved: the last word instead
    if ($WordToComplete -ne "" ) {
        $WordToComplete = $Arguments.Split(" ")[-1]
    }

    $IsEqualFlag = ($WordToComplete -Like "--*=*" )
    if ( $IsEqualFlag ) {
        $Flag,$WordToComplete = $WordToComplete.Split("=",2)
    }

    if ( $WordToComplete -eq "" -And ( -Not $IsEqualFlag )) {
        # the last word is complete: ask about the next one, empty so far (an empty
        # argument is `"`" before PowerShell 7.3's argument passing, "" after)
        if ($PSVersionTable.PsVersion -lt [version]'7.2.0' -or
            ($PSVersionTable.PsVersion -lt [version]'7.3.0' -and -not [ExperimentalFeature]::IsEnabled("PSNativeCommandArgumentPassing")) -or
            (($PSVersionTable.PsVersion -ge [version]'7.3.0' -or [ExperimentalFeature]::IsEnabled("PSNativeCommandArgumentPassing")) -and
              $PSNativeCommandArgumentPassing -eq 'Legacy')) {
             $RequestComp="$RequestComp" + ' `"`"'
        } else {
             $RequestComp="$RequestComp" + ' ""'
        }
    }

    Invoke-Expression -OutVariable out "$RequestComp" 2>&1 | Out-Null

    [int]$Directive = $Out[-1].TrimStart(':')
    if ($Directive -eq "") {
        $Directive = 0
    }
    $Out = $Out | Where-Object { $_ -ne $Out[-1] }

    if (($Directive -band $ShellCompDirectiveError) -ne 0 ) {
        return
    }

    $Longest = 0
    [Array]$Values = $Out | ForEach-Object {
        $Name, $Description = $_.Split("`t",2)
        if ($Longest -lt $Name.Length) {
            $Longest = $Name.Length
        }
        # CompletionResult takes no empty description
        if (-Not $Description) {
            $Description = " "
        }
        New-Object -TypeName PSCustomObject -Property @{
            Name = "$Name"
            Description = "$Description"
        }
    }

    $Space = " "
    if (($Directive -band $ShellCompDirectiveNoSpace) -ne 0 ) {
        $Space = ""
    }

    if (($Directive -band $ShellCompDirectiveFilterDirs) -ne 0 ) {
        # PowerShell's own completion: paths
        return
    }

    $Values = $Values | Where-Object {
        $_.Name -like "$WordToComplete*"
        if ( $IsEqualFlag ) {
            $_.Name = $Flag + "=" + $_.Name
        }
    }
    $Values = $Values | Sort-Object -Property Name

    if (($Directive -band $ShellCompDirectiveNoFileComp) -ne 0 ) {
        if ($Values.Length -eq 0) {
            # an empty string, or PowerShell would offer paths
            ""
            return
        }
    }

    $Mode = (Get-PSReadLineKeyHandler | Where-Object {$_.Key -eq "Tab" }).Function

    $Values | ForEach-Object {
        $comp = $_
        switch ($Mode) {
            # bash-like: the one value left inserted, else the values and descriptions
            "Complete" {
                if ($Values.Length -eq 1) {
                    $CompletionText = $($comp.Name | __deployplane_escapeStringWithSpecialChars) + $Space
                    if ($ExecutionContext.SessionState.LanguageMode -eq "FullLanguage"){
                        [System.Management.Automation.CompletionResult]::new($CompletionText, "$($comp.Name)", 'ParameterValue', "$($comp.Description)")
                    } else {
                        $CompletionText
                    }
                } else {
                    while($comp.Name.Length -lt $Longest) {
                        $comp.Name = $comp.Name + " "
                    }
                    if ($($comp.Description) -eq " " ) {
                        $Description = ""
                    } else {
                        $Description = "  ($($comp.Description))"
                    }
                    $CompletionText = "$($comp.Name)$Description"
                    if ($ExecutionContext.SessionState.LanguageMode -eq "FullLanguage"){
                        [System.Management.Automation.CompletionResult]::new($CompletionText, "$($comp.Name)$Description", 'ParameterValue', "$($comp.Description)")
                    } else {
                        $CompletionText
                    }
                }
             }
            # zsh-like: the description as the tooltip of the value chosen
            "MenuComplete" {
                $CompletionText = $($comp.Name | __deployplane_escapeStringWithSpecialChars) + $Space
                if ($ExecutionContext.SessionState.LanguageMode -eq "FullLanguage"){
                    [System.Management.Automation.CompletionResult]::new($CompletionText, "$($comp.Name)", 'ParameterValue', "$($comp.Description)")
                } else {
                    $CompletionText
                }
            }
            # TabCompleteNext: one value at a time, no space (the user types it)
            Default {
                $CompletionText = $($comp.Name | __deployplane_escapeStringWithSpecialChars)
                if ($ExecutionContext.SessionState.LanguageMode -eq "FullLanguage"){
                    [System.Management.Automation.CompletionResult]::new($CompletionText, "$($comp.Name)", 'ParameterValue', "$($comp.Description)")
                } else {
                    $CompletionText
                }
            }
        }
    }
}

Register-ArgumentCompleter -CommandName 'deployplane' -ScriptBlock ${__deployplaneCompleterBlock}
